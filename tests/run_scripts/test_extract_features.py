import json
import os
import re
import shutil

import numpy as np
import pytest

from bert_tf.runs.record import RunRecord
from tests import numpy_bert
from tests.hf_folder import write_folder
from tests.run_scripts.conftest import run_script
from tests.run_scripts.script_cases import run_cases
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config

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
    return [f"--{k}={v}" for k, v in values.items() if v is not None]


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
        assert line.startswith(
            f'{{"linex_index": {i}, "features": [{{"token": "[CLS]", "layers": [{{"index": -1, "values": ['
        )
        record = json.loads(line)
        assert record["linex_index"] == i
        assert [f["token"] for f in record["features"]] == tokens

        ids = np.array([[vocab[t] for t in tokens]])
        layers, _ = numpy_bert.bert(model.weights, model.config, ids, np.ones_like(ids), np.array([types]))
        for position, feature in enumerate(record["features"]):
            assert [entry["index"] for entry in feature["layers"]] == [-1, -2]
            for entry in feature["layers"]:
                expected = np.round(layers[entry["index"]][0, position], 6)
                # 6 decimals (0.5e-6 each side) and float32 against float64: oneDNN's AVX-512
                # products on an Intel Xeon put one value 3.0e-6 off, the same before and after the
                # Dense layers went 2-D (2.1e-6 held on an AMD EPYC).
                np.testing.assert_allclose(entry["values"], expected, atol=4e-6, rtol=0)


def test_bad_input_fails_before_any_work_and_a_full_disk_leaves_nothing(google_model_dir, tmp_path):
    """Every case in one process; none may leave an output file."""
    model = google_model_dir
    input_file = tmp_path / "input.txt"
    input_file.write_text("the cat\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    config_file = tmp_path / "bert_config.json"
    config_file.write_text(json.dumps(tiny_config(vocab_size=20).to_dict()))
    other = tiny_config(intermediate_size=48)
    other_checkpoint = write_tf1_checkpoint(tmp_path / "other.ckpt", random_weights(original_shapes(other)))
    damaged = write_tf1_checkpoint(tmp_path / "damaged.ckpt", model.weights)
    data_file = tmp_path / "damaged.ckpt.data-00000-of-00001"
    data_file.write_bytes(data_file.read_bytes()[:1000])
    fake_keras = tmp_path / "model.keras"
    fake_keras.write_text("not a zip archive")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"the cat\n\xff\xfe\x00\x01 sat\n")
    many = tmp_path / "many.txt"
    many.write_text("the red cat sat on the mat ||| a dog runs\n" * 40)
    out = tmp_path / "out.jsonl"
    # The same weights as a Hugging Face folder (cased tokenizer): its config, vocab and casing stand in for the flags'.
    hf = write_folder(tmp_path / "hf", model.weights, model.config, "BertForPreTraining", vocab=VOCAB,
                      do_lower_case=False)
    from_hf = {"init_checkpoint": hf, "vocab_file": None, "bert_config_file": None}
    cased = tmp_path / "cased.txt"
    cased.write_text("The Cat sat\n")  # "The" and "Cat" are [UNK] unless lower-cased
    # A cased fine-tuning run's folder (its record, vocab and config beside the weights): they stand in for the flags'.
    run = tmp_path / "run"
    shutil.copytree(model.path, run)
    RunRecord(kind="classifier", task_name="sst-2", do_lower_case=False).write(str(run))
    from_run = {"init_checkpoint": run / "bert_model.ckpt", "vocab_file": None, "bert_config_file": None}
    cases = [
        ({"input_file": cased, "output_file": tmp_path / "google.jsonl", "do_lower_case": False}, None),
        ({**from_hf, "input_file": cased, "output_file": tmp_path / "from_hf.jsonl"}, None),
        ({**from_hf, "do_lower_case": True}, r"--do_lower_case=True, but .*hf/tokenizer_config.json has do_lower_case"),
        ({**from_hf, "max_seq_length": 100}, "--max_seq_length=100 vs max_position_embeddings of --init_checkpoint="),
        ({**from_run, "input_file": cased, "output_file": tmp_path / "from_run.jsonl"}, None),
        ({**from_run, "do_lower_case": True}, rf"^extract_features.py: error: --do_lower_case=True, but the model in "
                                              rf"{run} was fine-tuned with --do_lower_case=False$"),
        ({"input_file": tmp_path / "nope.txt"}, "--input_file=.*nope.txt does not exist"),
        (
            {"bert_config_file": config_file},
            "--vocab_file vs --bert_config_file=.*: vocab .* has 25 tokens but the model's vocab_size is 20",
        ),
        (
            {"init_checkpoint": other_checkpoint},
            r"bert/encoder/layer_0/intermediate/dense/kernel: checkpoint has shape \(32, 48\), model "
            r"expects \(32, 64\)",
        ),
        (
            {"max_seq_length": 100},
            "--max_seq_length=100 vs max_position_embeddings of --bert_config_file=.*: Cannot use sequence length 100 "
            "because the BERT model was only trained up to sequence length 24",
        ),
        ({"layers": "-1,-5"}, "layer index -5 is out of range for a model with 2 layers"),
        # Checked on the name alone, before anything is read.
        (
            {"init_checkpoint": tmp_path / "cased_L-12_H-768_A-12" / "bert_model.ckpt"},
            r"`--do_lower_case=True` with .*cased_L-12_H-768_A-12.* seems to be a cased model",
        ),
        ({"output_file": tmp_path / "folder"}, r"--output_file=.*folder is a directory; name a file to write"),
        (
            {"output_file": tmp_path / "file" / "out.jsonl"},
            r"--output_file=.*out.jsonl is under .*file, which is a file",
        ),
        ({"input_file": tmp_path / "folder"}, r"--input_file=.*folder is a directory, not a file"),
        (
            {"output_file": input_file},
            r"--output_file=.*input.txt is the input file --input_file=.*input.txt: it would be overwritten",
        ),
        ({"vocab_file": tmp_path / "folder"}, r"--vocab_file=.*folder is a directory, not a file"),
        (
            {"init_checkpoint": damaged},
            r"--init_checkpoint=.*damaged.ckpt: checkpoint '.*damaged.ckpt' is damaged \(truncated or corrupted",
        ),
        ({"init_checkpoint": fake_keras}, r"--init_checkpoint=.*model.keras is not a Keras model file"),
        (
            {"input_file": many, "output_file": tmp_path / "full.jsonl"},
            r"writing --output_file=.*full.jsonl failed: File too large",
        ),
        ({"input_file": binary, "output_file": tmp_path / "binary.jsonl"}, None),
    ]
    outcomes, _, stderr = run_cases(
        "extract_features", [_flags(model, input_file, out, overrides) for overrides, _ in cases]
    )
    for (overrides, message), outcome in zip(cases, outcomes, strict=True):
        if message is None:
            assert outcome == "ok"
        else:
            assert outcome.startswith("extract_features.py: error: ") and re.search(message, outcome), (
                overrides,
                outcome,
            )
    assert not out.exists() and not (tmp_path / "full.jsonl").exists()
    assert (tmp_path / "from_hf.jsonl").read_text() == (tmp_path / "google.jsonl").read_text()
    assert (tmp_path / "from_run.jsonl").read_text() == (tmp_path / "google.jsonl").read_text()
    assert '"token": "[UNK]"' in (tmp_path / "from_hf.jsonl").read_text()  # the folder's casing: cased
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temporary left behind
    # Binary input: a warning naming the first bad line, then how much was replaced.
    assert re.search(r"--input_file=.*binary.txt: line 2 is not valid UTF-8", stderr)
    assert "Replaced 2 invalid UTF-8 byte(s) in 1 line(s) of --input_file" in stderr
    assert [json.loads(line)["linex_index"] for line in (tmp_path / "binary.jsonl").read_text().splitlines()] == [0, 1]
