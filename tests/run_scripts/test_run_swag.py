"""run_swag.py as a user runs it: SWAG's CSV files, learning a separable four-way choice, the
accuracy in eval_results.txt, per-example probabilities, and bad inputs named by file and line."""

import csv
import json
import os
import random

import numpy as np
import pytest

from tests.run_scripts.conftest import run_main_cases
from tests.run_scripts.fine_tuning_helpers import data_variant, read_results, script_flags, write_model

pytestmark = pytest.mark.slow

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "fox", "cow", "sat", "on", "mat",
         "run", "##s", "is", "big", "small", "and", "then", "it", "he", "she", "to", ".", ","]
ANIMALS = ["cat", "dog", "fox", "cow"]
FILL = ["the", "a", "sat", "on", "mat", "is", "big", "small", "and"]
HEADER = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1", "ending2",
          "ending3", "label"]


def write_swag(directory, n_train=160, n_val=40, n_test=13, seed=0):
    """The release's CSV files. sent1 names an animal; the right ending runs to it, the three
    others to the mat. Returns the test rows' (index, label)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    test = []
    for name, n in (("train", n_train), ("val", n_val), ("test", n_test)):
        rows = [HEADER if name != "test" else HEADER[:-1]]
        for i in range(n):
            animal = rng.choice(ANIMALS)
            words = rng.sample(FILL, 4) + [animal]
            rng.shuffle(words)
            sent1, sent2 = " ".join(words) + " .", rng.choice(["then it", "he", "she"])
            label = rng.randrange(4)
            endings = [f"runs to the {animal if j == label else 'mat'}, small" for j in range(4)]
            row = [str(7 * i), f"anetv_{i}", str(1000 + i), f"{sent1} {sent2}", sent1, sent2, "gold", *endings]
            rows.append(row + ([str(label)] if name != "test" else []))
            if name == "test":
                test.append((str(7 * i), label))
        with open(directory / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(rows)
    return test


@pytest.fixture
def model_dir(tmp_path):
    return write_model(tmp_path / "model", VOCAB)


def _flags(model_dir, data_dir, out, **overrides):
    values = dict(
        do_train=True, do_eval=True, do_predict=True, data_dir=data_dir, max_seq_length=24, train_batch_size=16,
        learning_rate=1e-3, num_train_epochs=6, save_checkpoints_steps=1000, output_dir=out, iterations_per_loop=20,
    )
    return script_flags(model_dir, {**values, **overrides})


def test_learns_a_separable_choice_and_writes_accuracy_and_probabilities_and_bad_inputs_fail(tmp_path, model_dir):
    data = tmp_path / "swag"
    test_rows = write_swag(data)
    good = {name: (data / name).read_text() for name in ("train.csv", "val.csv", "test.csv")}

    def folder(name, **files):
        return data_variant(tmp_path / name, good, **files)

    header, row = good["train.csv"].splitlines()[:2]
    no_label = folder("no_label", **{"train.csv": header.rsplit(",", 1)[0] + "\n" + row.rsplit(",", 1)[0] + "\n"})
    short_row = folder("short_row", **{"val.csv": f"{header}\n{row}\n1,anetv_1,5\n"})
    bad_label = folder("bad_label", **{"train.csv": f"{header}\n{row.rsplit(',', 1)[0]},7\n"})
    empty = folder("empty", **{"val.csv": ""})
    no_test = folder("no_test", **{"test.csv": None})
    other_task = tmp_path / "other_task"
    other_task.mkdir()
    (other_task / "fine_tuning_task.json").write_text(
        json.dumps({"task_name": "ner", "label_kind": "token", "labels": ["O"]})
    )

    trained = tmp_path / "trained"
    failures = [
        (dict(data_dir=no_label), f"{no_label / 'train.csv'}:1: no column 'label' in the header"),
        (dict(data_dir=short_row), f"{short_row / 'val.csv'}:3: 3 columns, but the header (line 1) has 12"),
        (dict(data_dir=bad_label), f"{bad_label / 'train.csv'}:2: label '7' is not an ending's index (0 to 3)"),
        (dict(data_dir=empty), f"{empty / 'val.csv'}: no examples (the file is empty)"),
        (dict(data_dir=no_test), "no test file 'test.csv' in --data_dir"),
        (dict(data_dir=None), "--data_dir (the SWAG CSV files) is required"),
        (dict(output_dir=other_task), "holds a run of task 'ner'"),
        (dict(do_train=False), "nothing to evaluate or predict with"),
        (dict(max_seq_length=25), "Cannot use sequence length 25"),
    ]
    argvs = [_flags(model_dir, data, trained)]
    for i, (overrides, _) in enumerate(failures):
        values = {"data_dir": data, "output_dir": tmp_path / f"out{i}"} | overrides
        argvs.append(_flags(model_dir, values.pop("data_dir"), values.pop("output_dir"), **values))
    outcomes = run_main_cases("run_swag", argvs)
    assert outcomes[0] == "ok", outcomes[0]
    for (overrides, message), outcome, i in zip(failures, outcomes[1:], range(len(failures)), strict=True):
        assert message in outcome, (overrides, outcome)
        assert outcome.startswith("run_swag.py: error: ")
        assert not os.path.exists(tmp_path / f"out{i}" / "checkpoint")

    results = read_results(trained / "eval_results.txt")
    assert set(results) == {"eval_accuracy", "eval_loss", "global_step", "loss"}
    assert float(results["eval_accuracy"]) > 0.9 and results["global_step"] == "60"
    # test_results.tsv: the four endings' probabilities per test example, none dropped.
    rows = (trained / "test_results.tsv").read_text().splitlines()
    probabilities = np.array([[float(v) for v in line.split("\t")] for line in rows])
    assert probabilities.shape == (13, 4)
    np.testing.assert_allclose(probabilities.sum(1), 1.0, atol=1e-5)
    lines = (trained / "test_predictions.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction"
    predicted = [[index, str(p.argmax())] for (index, _), p in zip(test_rows, probabilities, strict=True)]
    assert [line.split("\t") for line in lines[1:]] == predicted
    assert np.mean([p.argmax() == label for (_, label), p in zip(test_rows, probabilities, strict=True)]) > 0.9
    record = json.loads((trained / "fine_tuning_task.json").read_text())
    assert record["task_name"] == "swag" and record["num_choices"] == 4
    assert (trained / "vocab.txt").exists() and (trained / "bert_config.json").exists()
