import json

import numpy as np
import pytest

from bert_tf.feature_extraction import feature_json_line, parse_layer_indexes, read_examples


def test_read_examples_like_the_original(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"first line  \r\nA side ||| B side\n\nbad \xff byte\nno ||| \n")
    examples = list(read_examples(str(path)))
    assert [(e.unique_id, e.text_a, e.text_b) for e in examples] == [
        (0, "first line", None),
        (1, "A side", "B side"),
        (2, "", None),  # a blank line is an example too
        (3, "bad \ufffd byte", None),
        (4, "no |||", None),  # stripped first, so no " ||| " separator remains
    ]


def test_parse_layer_indexes():
    assert parse_layer_indexes("-1,-2,-3,-4", 12) == [-1, -2, -3, -4]
    with pytest.raises(ValueError, match="layer index -3 is out of range for a model with 2 layers"):
        parse_layer_indexes("-1,-3", 2)
    with pytest.raises(ValueError, match="comma-separated integers"):
        parse_layer_indexes("last", 2)


def test_json_line_format_is_the_original():
    layers = {-1: np.array([[0.12345678, -1.0], [2.0000004, 3.5]], np.float32)}
    line = feature_json_line(7, ["[CLS]", "[SEP]"], layers)
    assert line.endswith("\n") and line.count("\n") == 1
    assert line == (
        '{"linex_index": 7, "features": ['
        '{"token": "[CLS]", "layers": [{"index": -1, "values": [0.123457, -1.0]}]}, '
        '{"token": "[SEP]", "layers": [{"index": -1, "values": [2.0, 3.5]}]}]}\n'
    )
    assert json.loads(line)["features"][1]["layers"][0]["values"] == [2.0, 3.5]
