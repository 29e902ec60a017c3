"""SWAG's CSV files (the release's columns) read as examples; bad files named by file and line."""

import csv
import re

import pytest

from bert_tf.tasks.swag.reader import encode_examples, read_swag

HEADER = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1", "ending2",
          "ending3", "label"]
ROWS = [
    ["0", "lsmdc1052_Harry_Potter-94857", "18313", "Students lower their eyes nervously. She",
     "Students lower their eyes nervously.", "She", "gold", "pats her shoulder, then saunters toward someone.",
     "turns with two students.", "walks slowly towards someone.", "wheels around as her dog thunders out.", "2"],
    ["1", "anetv_dm5WXFiQZUQ", "18419", "He rides the motorcycle. He", "He rides the motorcycle.", "He", "gen",
     'says "hi",\nthen leaves.', "rides away.", "falls.", "stops.", "0"],
]


def _write(tmp_path, rows, name="train.csv"):
    path = tmp_path / name
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return str(path)


def _raises(*fragments):
    return pytest.raises(ValueError, match="(?s)" + ".*".join(re.escape(f) for f in fragments))


def test_reads_the_releases_columns_quoted_fields_included(tmp_path):
    examples = read_swag(_write(tmp_path, [HEADER, *ROWS]), "train")
    assert [(e.guid, e.index, e.label) for e in examples] == [("train-0", "0", 2), ("train-1", "1", 0)]
    assert examples[0].context == "Students lower their eyes nervously." and examples[0].start == "She"
    assert examples[1].endings == ['says "hi",\nthen leaves.', "rides away.", "falls.", "stops."]
    features = encode_examples(examples)
    assert features["context"].shape == (2,) and features["choices"].shape == (2, 4)
    assert features["choices"][0, 1] == "She turns with two students."
    assert features["label"].tolist() == [2, 0]
    # test.csv: no label column; columns in another order, one more column.
    shuffled = [HEADER[:-1][::-1] + ["extra"]] + [row[:-1][::-1] + ["x"] for row in ROWS]
    test = read_swag(_write(tmp_path, shuffled, "test.csv"), "test", labelled=False)
    assert [(e.label, e.endings[2], e.context) for e in test] == [
        (None, "walks slowly towards someone.", "Students lower their eyes nervously."),
        (None, "falls.", "He rides the motorcycle."),
    ]
    assert encode_examples(test)["label"].tolist() == [0, 0]


def test_bad_files_name_the_file_and_line(tmp_path):
    no_label = _write(tmp_path, [HEADER[:-1], ROWS[0][:-1]])
    with _raises(f"{no_label}:1: no column 'label' in the header"):
        read_swag(no_label)
    no_endings = _write(tmp_path, [[h for h in HEADER if h not in ("ending1", "sent2")], ROWS[0][:-2]])
    with _raises(f"{no_endings}:1: no column 'sent2', 'ending1'"):
        read_swag(no_endings)
    short = _write(tmp_path, [HEADER, ROWS[0], ROWS[1][:-1]])
    # The second row's quoted ending spans lines 3-4: its line is where the row ends.
    with _raises(f"{short}:4: 11 columns, but the header (line 1) has 12"):
        read_swag(short)
    bad_label = _write(tmp_path, [HEADER, ROWS[0][:-1] + ["4"]])
    with _raises(f"{bad_label}:2: label '4' is not an ending's index (0 to 3)"):
        read_swag(bad_label)
    with _raises("empty.csv: no examples (the file is empty)"):
        read_swag(_write(tmp_path, [], "empty.csv"))
    with _raises("header.csv: no examples (only a header)"):
        read_swag(_write(tmp_path, [HEADER], "header.csv"))
