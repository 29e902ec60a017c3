import json
import re

import numpy as np
import pytest

from tests import numpy_bert
from tests.run_scripts.conftest import run_script
from tests.tiny import VOCAB, tiny_config
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint

pytestmark = pytest.mark.slow

LINES = [
    "The cat sat on the mat.",
    "A dog runs ||| the red cat is big",
    "",
    "unwanted running, the small blue dog sat on a big red mat and the cat is small",
]
# Hand-tokenized with the original rules over tests.tiny.VOCAB, packed as the original packs
# them for --max_seq_length=12 (the last line is cut to 10 word pieces).
EXPECTED_TOKENS = [
    ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"],
    ["[CLS]", "a", "dog", "run", "##s", "[SEP]", "the", "red", "cat", "is", "big", "[SEP]"],
    ["[CLS]", "[SEP]"],
    # No "##ed" in the vocab: one unmatched piece makes the whole word [UNK].
    ["[CLS]", "[UNK]", "run", "##ning", ",", "the", "small", "blue", "dog", "sat", "on", "[SEP]"],
]
EXPECTED_TYPES = [[0] * 9, [0] * 6 + [1] * 6, [0, 0], [0] * 12]


def _flags(model, input_file, output_file, overrides=None):
    values = dict(
        input_file=input_file,
        output_file=output_file,
        vocab_file=model.path / "vocab.txt",
        bert_config_file=model.path / "bert_config.json",
        init_checkpoint=model.prefix,
        layers="-1,-2",
        max_seq_length=12,
        batch_size=3,
    )
    values.update(overrides or {})
    return [f"--{k}={v}" for k, v in values.items()]


def test_original_command_line_gives_the_original_numbers(google_model_dir, tmp_path):
    model = google_model_dir
    input_file, output_file = tmp_path / "input.txt", tmp_path / "output.jsonl"
    input_file.write_text("\n".join(LINES) + "\n")
    result = run_script("extract_features.py", *_flags(model, input_file, output_file), "--do_lower_case=True")
    assert result.returncode == 0, result.stderr[-3000:]

    lines = output_file.read_text().splitlines()
    assert len(lines) == len(LINES)
    vocab = {t: i for i, t in enumerate(VOCAB)}
    for i, (line, tokens, types) in enumerate(zip(lines, EXPECTED_TOKENS, EXPECTED_TYPES, strict=True)):
        assert line.startswith('{"linex_index": %d, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [' % i)
        record = json.loads(line)
        assert record["linex_index"] == i
        assert [f["token"] for f in record["features"]] == tokens

        ids = np.array([[vocab[t] for t in tokens]])
        layers, _ = numpy_bert.bert(model.weights, model.config, ids, np.ones_like(ids), np.array([types]))
        for position, feature in enumerate(record["features"]):
            assert [entry["index"] for entry in feature["layers"]] == [-1, -2]
            for entry in feature["layers"]:
                expected = np.round(layers[entry["index"]][0, position], 6)
                # 6 decimals; float32 vs float64 may land on either side of a rounding edge.
                np.testing.assert_allclose(entry["values"], expected, atol=2.1e-6, rtol=0)


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing_input", "--input_file=.*nope.txt does not exist"),
        ("vocab_mismatch", "has 25 tokens but --bert_config_file=.* says vocab_size=30"),
        ("checkpoint_mismatch", r"bert/encoder/layer_0/intermediate/dense/kernel: checkpoint has shape \(32, 48\), model expects \(32, 64\)"),
        ("seq_too_long", "--max_seq_length=100 exceeds max_position_embeddings=24"),
        ("bad_layers", "layer index -5 is out of range for a model with 2 layers"),
        ("casing", r"`--do_lower_case=True` with .*cased_L-12_H-768_A-12.* seems to be a cased model"),
    ],
)
def test_bad_input_fails_before_any_work(google_model_dir, tmp_path, case, message):
    model = google_model_dir
    input_file, output_file = tmp_path / "input.txt", tmp_path / "out.jsonl"
    input_file.write_text("the cat\n")
    overrides = {}
    if case == "missing_input":
        overrides["input_file"] = tmp_path / "nope.txt"
    elif case == "vocab_mismatch":
        config_file = tmp_path / "bert_config.json"
        config_file.write_text(json.dumps(tiny_config(vocab_size=30).to_dict()))
        overrides["bert_config_file"] = config_file
    elif case == "checkpoint_mismatch":
        other = tiny_config(intermediate_size=48)
        overrides["init_checkpoint"] = write_tf1_checkpoint(tmp_path / "other.ckpt", random_weights(original_shapes(other)))
    elif case == "seq_too_long":
        overrides["max_seq_length"] = 100
    elif case == "bad_layers":
        overrides["layers"] = "-1,-5"
    elif case == "casing":  # checked on the name alone, before anything is read
        overrides["init_checkpoint"] = tmp_path / "cased_L-12_H-768_A-12" / "bert_model.ckpt"
    result = run_script("extract_features.py", *_flags(model, input_file, output_file, overrides))
    assert result.returncode != 0
    assert re.search(message, result.stderr), result.stderr[-2000:]
    assert not output_file.exists()
