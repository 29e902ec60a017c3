"""SQuAD from tensorflow-datasets (`squad/v1.1`, `squad/v2.0`) as a SQuAD json file, so that
the one reader (`bert_tf.tasks.squad.features`), the official evaluation and the output files treat it
as they treat the downloaded files."""

import json
import os

from bert_tf.data.tfds import load_split
from bert_tf.io_utils import atomic_write


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _answers(value):
    return [
        {"text": _text(text), "answer_start": int(start)}
        for text, start in zip(value["text"], value["answer_start"], strict=True)
    ]


def squad_articles(rows):
    """TFDS rows (numpy dicts) -> SQuAD's `data` list: an article per run of equal titles, a
    paragraph per run of equal contexts, in the rows' order."""
    data = []
    for row in rows:
        title, context = _text(row["title"]), _text(row["context"])
        if not data or data[-1]["title"] != title:
            data.append({"title": title, "paragraphs": []})
        paragraphs = data[-1]["paragraphs"]
        if not paragraphs or paragraphs[-1]["context"] != context:
            paragraphs.append({"context": context, "qas": []})
        qa = {"id": _text(row["id"]), "question": _text(row["question"]), "answers": _answers(row["answers"])}
        if "is_impossible" in row:
            qa["is_impossible"] = bool(row["is_impossible"])
            qa["plausible_answers"] = _answers(row["plausible_answers"])
        paragraphs[-1]["qas"].append(qa)
    return data


def write_squad_json(name, split, path, data_dir=None, download=False):
    """Writes TFDS dataset `name`'s `split` to `path` in SQuAD's json layout (atomically);
    returns the number of questions."""
    if not name.startswith("squad"):
        raise ValueError(f"{name!r} is not a SQuAD dataset of TFDS (squad/v1.1 or squad/v2.0)")
    where = f"TFDS dataset {name}, split {split}, data_dir {data_dir or '(TFDS default)'}"
    _, dataset = load_split(name, split, data_dir, download, where)
    data = squad_articles(dataset.as_numpy_iterator())
    version = "v2.0" if name.endswith("v2.0") else "1.1"
    with atomic_write(path) as f:
        json.dump({"version": version, "data": data}, f, ensure_ascii=False)
    return sum(len(p["qas"]) for a in data for p in a["paragraphs"])


def tfds_json_file(name, split, output_dir, data_dir=None, download=False):
    """TFDS dataset `name`'s `split` written as a SQuAD json file in `output_dir` (so that the one
    reader, the official evaluation and the output files all work on it as on a downloaded
    file); returns its path, `<name with _ for />_<split>.json`."""
    path = os.path.join(output_dir, f"{name.replace('/', '_')}_{split}.json")
    write_squad_json(name, split, path, data_dir, download)
    return path
