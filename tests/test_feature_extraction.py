import errno
import json
import os
import re

import numpy as np
import pytest
from absl import logging

from bert_tf.feature_extraction import (
    check_inputs,
    feature_json_line,
    parse_layer_indexes,
    read_examples,
    restore_encoder,
    write_features,
)
from bert_tf.tokenization import FullTokenizer
from tests import numpy_bert
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config, write_vocab


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


# ---------------------------------------------------------------------------------------------
# The run extract_features.py makes: checks, the encoder restored, the lines written.


def test_check_inputs_names_the_setting_at_fault(tmp_path):
    vocab = {t: i for i, t in enumerate(VOCAB)}
    text = tmp_path / "in.txt"
    text.write_text("the cat\n")
    check_inputs(vocab, "v.txt", str(text), 3, 1)  # [CLS] A [SEP] fits; nothing to say
    cases = [
        ((vocab, "v.txt", str(text), 2, 1), ValueError, "max_seq_length=2 leaves no room for"),
        ((vocab, "v.txt", str(text), 8, 0), ValueError, "batch_size=0 must be positive"),
        (({"[CLS]": 0, "x": 1}, "v.txt", str(text), 8, 1), ValueError, r"vocab_file=v.txt lacks \[SEP\], \[UNK\]"),
        ((vocab, "v.txt", str(tmp_path), 8, 1), ValueError, f"input_file={tmp_path} is a directory, not a file"),
        ((vocab, "v.txt", str(tmp_path / "no.txt"), 8, 1), FileNotFoundError, "input_file=.*no.txt does not exist"),
    ]
    for arguments, error, message in cases:
        with pytest.raises(error, match=f"^{message}"):
            check_inputs(*arguments)


def _checkpoint(tmp_path, with_heads=False):
    """A tiny model's original (TF1) checkpoint, and its weights."""
    config = tiny_config()
    weights = random_weights(original_shapes(config, with_heads), seed=5)
    return config, weights, write_tf1_checkpoint(tmp_path / "bert_model.ckpt", weights, adam_slots=False)


@pytest.fixture
def checkpoint(tmp_path):
    return _checkpoint(tmp_path)


def test_restore_encoder_takes_the_encoder_weights_and_lists_the_rest(tmp_path):
    config, weights, prefix = _checkpoint(tmp_path, with_heads=True)
    with pytest.warns(UserWarning, match="not used by BertEncoder"):
        encoder, unused = restore_encoder(config, prefix)
    assert sorted(unused) == sorted(name for name in weights if name.startswith("cls/"))  # the heads
    ids, mask, types = np.array([[2, 5, 7, 3]]), np.ones((1, 4), np.int32), np.zeros((1, 4), np.int32)
    layers, _ = numpy_bert.bert(weights, config, ids, mask, types)
    outputs = encoder.predict_on_batch({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    np.testing.assert_allclose(outputs["encoder_outputs"][-1], layers[-1], atol=1e-4)
    with pytest.raises(ValueError):
        restore_encoder(tiny_config(intermediate_size=48), prefix)  # shapes that do not fit


def test_write_features_writes_the_original_lines_and_tells_of_its_progress(tmp_path, checkpoint):
    config, weights, prefix = checkpoint
    encoder, _ = restore_encoder(config, prefix)
    tokenizer = FullTokenizer(write_vocab(tmp_path / "vocab.txt"))
    input_file, output_file = tmp_path / "in.txt", tmp_path / "out.jsonl"
    input_file.write_bytes(b"the cat sat\na dog runs ||| the red \xff cat\n" + b"the mat\n" * 998)
    logged = []
    written = write_features(
        encoder, tokenizer, str(input_file), str(output_file), 12, [-1, -2], batch_size=64,
        log=lambda level, line: logged.append((level, line)), prefix="--",
    )

    info, warning = logging.INFO, logging.WARNING
    assert (written.lines, written.invalid_lines, written.invalid_bytes) == (1000, 1, 1)
    # The bad line is named as it is read (before the first batch is written), then the first
    # five examples' tokens, then the thousandth line's rate.
    assert logged[:6] == [
        (
            warning,
            f"--input_file={input_file}: line 2 is not valid UTF-8 (binary input, another encoding?); its invalid "
            "bytes are replaced and then dropped by the tokenizer",
        ),
        (info, "unique_id: 0 tokens: [CLS] the cat sat [SEP]"),
        (info, "unique_id: 1 tokens: [CLS] a dog run ##s [SEP] the red cat [SEP]"),
        (info, "unique_id: 2 tokens: [CLS] the mat [SEP]"),
        (info, "unique_id: 3 tokens: [CLS] the mat [SEP]"),
        (info, "unique_id: 4 tokens: [CLS] the mat [SEP]"),
    ]
    assert len(logged) == 7 and logged[6][0] == info and re.fullmatch(r"1000 lines, [\d.]+ lines/s", logged[6][1])
    assert written.report(prefix="--") == [
        (warning, "Replaced 1 invalid UTF-8 byte(s) in 1 line(s) of --input_file"),
        (info, f"Wrote 1000 lines to {output_file} in {written.seconds:.1f} s"),
    ]

    lines = output_file.read_text().splitlines()
    assert len(lines) == 1000 and not [f for f in os.listdir(tmp_path) if f.startswith(".")]
    tokens = ["[CLS]", "a", "dog", "run", "##s", "[SEP]", "the", "red", "cat", "[SEP]"]
    ids = np.array([[VOCAB.index(t) for t in tokens]])
    expected, _ = numpy_bert.bert(weights, config, ids, np.ones_like(ids), np.array([[0] * 6 + [1] * 4]))
    record = json.loads(lines[1])
    assert record["linex_index"] == 1 and [f["token"] for f in record["features"]] == tokens
    for position, feature in enumerate(record["features"]):
        assert [entry["index"] for entry in feature["layers"]] == [-1, -2]
        for entry in feature["layers"]:
            np.testing.assert_allclose(entry["values"], expected[entry["index"]][0, position], atol=1e-4)


def test_a_failed_write_raises_and_leaves_nothing(tmp_path, checkpoint):
    config, _, prefix = checkpoint
    encoder, _ = restore_encoder(config, prefix)
    tokenizer = FullTokenizer(write_vocab(tmp_path / "vocab.txt"))
    (tmp_path / "in.txt").write_text("the cat\n" * 10)

    def full_disk(level, line):
        if line.startswith("unique_id: 3"):  # after three lines are written
            raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_features(encoder, tokenizer, str(tmp_path / "in.txt"), str(tmp_path / "o.jsonl"), 8, [-1], log=full_disk)
    assert not (tmp_path / "o.jsonl").exists() and not [f for f in os.listdir(tmp_path) if f.startswith(".")]


def test_outputs_that_overflow_stop_the_writing_and_leave_nothing(tmp_path, checkpoint):
    """A finite weight whose products overflow: JSON would write NaN or Infinity as if they were features."""
    config, _, prefix = checkpoint
    encoder, _ = restore_encoder(config, prefix)
    gamma = next(w for w in encoder.weights if "layer_1" in w.path and "output_layer_norm" in w.path
                 and "gamma" in w.path)
    gamma.assign(np.full(gamma.shape, 3e38, np.float32))
    tokenizer = FullTokenizer(write_vocab(tmp_path / "vocab.txt"))
    (tmp_path / "in.txt").write_text("the cat\n" * 3)
    with pytest.raises(FloatingPointError, match=r"^example 0: layer -1's outputs hold NaN or Inf"):
        write_features(encoder, tokenizer, str(tmp_path / "in.txt"), str(tmp_path / "o.jsonl"), 8, [-1],
                       log=lambda level, line: None)
    assert not (tmp_path / "o.jsonl").exists() and not [f for f in os.listdir(tmp_path) if f.startswith(".")]


def test_batches_cut_to_their_longest_line_write_what_fixed_padding_writes(tmp_path, checkpoint):
    config, _, prefix = checkpoint
    encoder, _ = restore_encoder(config, prefix)
    tokenizer = FullTokenizer(write_vocab(tmp_path / "vocab.txt"))
    input_file = tmp_path / "in.txt"
    # Tokens with [CLS] and [SEP]: 3, 4 | 8, 11 | 5 (a batch of one).
    input_file.write_text("cat\nthe cat\na dog runs ||| the red cat\nthe cat sat on the mat and the dog\nis big red\n")
    shapes = []
    predict = encoder.predict_on_batch
    encoder.predict_on_batch = lambda x: shapes.append(tuple(x["input_word_ids"].shape)) or predict(x)
    written = {}
    for bucket in (None, 4):
        out = tmp_path / f"out_{bucket}.jsonl"
        write_features(encoder, tokenizer, str(input_file), str(out), 16, [-1, 0], batch_size=2, length_bucket=bucket)
        written[bucket] = [json.loads(line) for line in out.read_text().splitlines()]
    assert shapes == [(2, 16), (2, 16), (1, 16), (2, 4), (2, 12), (1, 8)]  # the longest rounded up to 4s
    for fixed, cut in zip(written[None], written[4], strict=True):
        assert [f["token"] for f in cut["features"]] == [f["token"] for f in fixed["features"]]
        for a, b in zip(fixed["features"], cut["features"], strict=True):
            for x, y in zip(a["layers"], b["layers"], strict=True):
                assert x["index"] == y["index"]
                np.testing.assert_allclose(y["values"], x["values"], atol=2e-6)  # 6 decimals, as written
