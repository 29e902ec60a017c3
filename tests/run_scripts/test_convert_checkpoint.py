import json
import os
import re
import shutil

import keras
import numpy as np
import pytest

from bert_tf import BertPretrainer
from tests import numpy_bert
from tests.hf_folder import write_folder
from tests.run_scripts.conftest import run_script
from tests.run_scripts.script_cases import run_cases
from tests.tf1_checkpoint import original_shapes, read_tf1_checkpoint
from tests.tiny import VOCAB, tiny_inputs, write_vocab

pytestmark = pytest.mark.slow


def test_original_to_keras_to_original(google_model_dir, tmp_path):
    model = google_model_dir
    keras_file = tmp_path / "bert.keras"
    result = run_script(
        "convert_checkpoint.py",
        "--direction=to_keras",
        f"--bert_config_file={model.path / 'bert_config.json'}",
        f"--checkpoint_to_convert={model.prefix}",
        f"--converted_checkpoint_path={keras_file}",
    )
    assert result.returncode == 0, result.stderr[-3000:]

    loaded = keras.saving.load_model(str(keras_file))
    assert isinstance(loaded, BertPretrainer)  # the checkpoint has the cls/ heads
    x = tiny_inputs(model.config)
    layers, pooled = numpy_bert.bert(
        model.weights, model.config, x["input_word_ids"], x["input_mask"], x["input_type_ids"]
    )
    mlm, nsp = numpy_bert.pretraining_heads(model.weights, layers[-1], pooled, x["masked_lm_positions"])
    out = loaded(x)
    assert np.max(np.abs(np.asarray(out["masked_lm_logits"]) - mlm)) <= 1e-5
    assert np.max(np.abs(np.asarray(out["next_sentence_logits"]) - nsp)) <= 1e-5

    export = tmp_path / "export" / "bert_model.ckpt"
    result = run_script(
        "convert_checkpoint.py",
        "--direction=to_original",
        f"--bert_config_file={model.path / 'bert_config.json'}",
        f"--checkpoint_to_convert={keras_file}",
        f"--converted_checkpoint_path={export}",
        "--global_step=123",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    restored = read_tf1_checkpoint(export, original_shapes(model.config))
    for name, value in model.weights.items():
        np.testing.assert_array_equal(restored[name], value, err_msg=name)
    written = json.loads((tmp_path / "export" / "bert_config.json").read_text())
    assert written["directionality"] == "bidi"  # the released config's extra key survives
    assert written == json.loads((model.path / "bert_config.json").read_text())

    # Google's checkpoint straight to a Hugging Face folder (its config and vocab beside it), as
    # transformers' own converter takes it: the same folder as the two steps through the .keras file.
    direct, two_steps = tmp_path / "hf_direct", tmp_path / "hf_two_steps"
    result = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={model.prefix}",
                        f"--converted_checkpoint_path={direct}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Wrote a Hugging Face folder of a BertPretrainer (BertForPreTraining) to {direct}" in result.stderr
    # The second folder is given as a link to another disk that holds an earlier conversion: it is
    # replaced there, and the link stays.
    disk = tmp_path / "disk"
    disk.mkdir()
    shutil.copytree(direct, disk / "hf")
    two_steps.symlink_to(disk / "hf", target_is_directory=True)
    result = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={keras_file}",
                        f"--vocab_file={model.path / 'vocab.txt'}", f"--converted_checkpoint_path={two_steps}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert os.readlink(two_steps) == str(disk / "hf") and os.listdir(disk) == ["hf"]
    assert sorted(os.listdir(direct)) == sorted(os.listdir(two_steps))
    for name in ("config.json", "tokenizer_config.json", "vocab.txt"):
        assert (direct / name).read_text() == (two_steps / name).read_text(), name
    from safetensors.numpy import load_file

    ours, theirs = load_file(str(direct / "model.safetensors")), load_file(str(two_steps / "model.safetensors"))
    assert sorted(ours) == sorted(theirs) and all(np.array_equal(ours[k], theirs[k]) for k in ours)


def test_bad_paths_and_files_fail_before_any_work_and_a_full_disk_leaves_nothing(google_model_dir, tmp_path):
    model = google_model_dir
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    fake = tmp_path / "model.keras"
    fake.write_text("not a zip archive")
    damaged = tmp_path / "damaged.ckpt"
    for suffix in (".index", ".data-00000-of-00001"):
        data = open(model.prefix + suffix, "rb").read()
        (tmp_path / f"damaged.ckpt{suffix}").write_bytes(data if suffix == ".index" else data[: len(data) // 2])
    to_keras = [
        "--direction=to_keras",
        f"--bert_config_file={model.path / 'bert_config.json'}",
        f"--checkpoint_to_convert={model.prefix}",
    ]
    def to_hf_output(name):
        return [f"--converted_checkpoint_path={tmp_path / name}"]

    # A sentence-transformers model as downloaded from the Hub, a Hugging Face folder with a NaN
    # in a weight, a fine-tuning search's folder and a vocabulary with one token changed.
    hub = write_folder(tmp_path / "hub", model.weights, model.config, "BertForPreTraining", vocab=VOCAB)
    (hub / "1_Pooling").mkdir()
    for name in ("README.md", "modules.json", "tokenizer.json"):
        (hub / name).write_text("{}")
    nan = {**model.weights, "bert/encoder/layer_0/output/dense/bias": np.full(32, np.nan, np.float32)}
    write_folder(tmp_path / "nan_hf", nan, model.config, "BertForPreTraining")
    (tmp_path / "search" / "best").mkdir(parents=True)
    (tmp_path / "search" / "search.json").write_text("{}")
    write_vocab(tmp_path / "other_vocab.txt", VOCAB[:5] + ["zzz"] + VOCAB[6:])
    hub_files = sorted(os.listdir(hub))

    cases = [
        (
            [
                "--direction=to_keras",
                f"--checkpoint_to_convert={model.prefix}",
                f"--converted_checkpoint_path={tmp_path / 'x.keras'}",
            ],
            "--direction=to_keras needs --bert_config_file",
        ),
        (
            [
                "--direction=to_original",
                f"--checkpoint_to_convert={fake}",
                f"--converted_checkpoint_path={tmp_path / 'o' / 'bert_model.ckpt'}",
            ],
            r"--checkpoint_to_convert=.*model.keras is not a Keras model file",
        ),
        (
            [
                "--direction=to_original",
                f"--checkpoint_to_convert={fake}",
                f"--converted_checkpoint_path={tmp_path / 'folder'}",
            ],
            r"--converted_checkpoint_path=.*folder is a directory; give a checkpoint prefix such as "
            r".*folder/bert_model.ckpt",
        ),
        (
            [
                "--direction=to_original",
                f"--checkpoint_to_convert={fake}",
                f"--converted_checkpoint_path={tmp_path / 'file' / 'bert_model.ckpt'}",
            ],
            r"--converted_checkpoint_path=.*bert_model.ckpt is under .*file, which is a file",
        ),
        (
            [*to_keras, f"--converted_checkpoint_path={tmp_path / 'file' / 'x.keras'}"],
            r"x.keras is under .*file, which is a file",
        ),
        (
            [*to_keras, f"--converted_checkpoint_path={tmp_path / 'folder'}"],
            r"--converted_checkpoint_path=.*folder is a directory",
        ),
        (
            [
                "--direction=to_keras",
                f"--bert_config_file={model.path / 'bert_config.json'}",
                f"--checkpoint_to_convert={damaged}",
                f"--converted_checkpoint_path={tmp_path / 'x.keras'}",
            ],
            r"checkpoint '.*damaged.ckpt' is damaged \(truncated or corrupted",
        ),
        # A full disk: writes past 30 kB fail (see script_cases).
        (
            [*to_keras, f"--converted_checkpoint_path={tmp_path / 'full.keras'}"],
            r"writing --converted_checkpoint_path=.*full.keras failed: File too large",
        ),
        ([*to_keras, f"--converted_checkpoint_path={tmp_path / 'x.keras'}"], None),
        # To a Hugging Face folder and back; a folder that is not one is refused, a failed write leaves nothing.
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'x.keras'}", *to_hf_output("hf")],
            r"--vocab_file is required by --direction=to_hf \(no vocab.txt beside --checkpoint_to_convert=",
        ),
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'x.keras'}", *to_hf_output("hf"),
             f"--vocab_file={model.path / 'vocab.txt'}", "--do_lower_case=False", "--verbosity=0"],
            None,
        ),
        (
            ["--direction=to_keras", f"--checkpoint_to_convert={tmp_path / 'hf'}",
             f"--converted_checkpoint_path={tmp_path / 'back.keras'}"],
            None,
        ),
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'x.keras'}", *to_hf_output("uncased_tiny"),
             f"--vocab_file={model.path / 'vocab.txt'}"],
            r"--converted_checkpoint_path=.*uncased_tiny is not empty and not the output of an earlier conversion "
            r"\(it holds bert_config.json, bert_model.ckpt.data-00000-of-00001, ",
        ),
        # Only the folder an earlier conversion wrote is replaced (logged), never one from the Hub.
        (["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'x.keras'}", *to_hf_output("hf"),
          f"--vocab_file={model.path / 'vocab.txt'}", "--do_lower_case=False", "--verbosity=0"], None),
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'x.keras'}", *to_hf_output("hub"),
             f"--vocab_file={model.path / 'vocab.txt'}"],
            r"--converted_checkpoint_path=.*hub is not empty and not the output of an earlier conversion \(it holds "
            r"README.md, config.json with transformers_version, tokenizer.json\): name a new",
        ),
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'hf'}", *to_hf_output("hf_other"),
             f"--vocab_file={tmp_path / 'other_vocab.txt'}"],
            rf"--vocab_file=.*other_vocab.txt is not the vocabulary of .*hf/vocab.txt: line 6 is 'zzz' vs "
            rf"{VOCAB[5]!r}$",
        ),
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'search'}", *to_hf_output("hf_search")],
            r"--checkpoint_to_convert=(.*search) holds a search \(search.json\): use --checkpoint_to_convert=\1/best, "
            r"its chosen run$",
        ),
        (
            ["--direction=to_keras", f"--checkpoint_to_convert={tmp_path / 'nan_hf'}",
             f"--converted_checkpoint_path={tmp_path / 'nan.keras'}"],
            r"nan_hf/model.safetensors: weight bert.encoder.layer.0.output.dense.bias holds NaN or infinity "
            r"\(32 of 32 ",
        ),
        (
            ["--direction=to_hf", f"--checkpoint_to_convert={tmp_path / 'x.keras'}", *to_hf_output("full.hf"),
             f"--vocab_file={model.path / 'vocab.txt'}"],
            r"writing --converted_checkpoint_path=.*full.hf failed: File too large",
        ),
        (
            [
                "--direction=to_original",
                f"--checkpoint_to_convert={tmp_path / 'x.keras'}",
                f"--converted_checkpoint_path={tmp_path / 'full.ckpt'}",
            ],
            r"writing --converted_checkpoint_path=.*full.ckpt failed: ",
        ),
    ]
    info = "import logging, sys\nlogging.getLogger('absl').addHandler(logging.StreamHandler(sys.stderr))"
    outcomes, _, logs = run_cases("convert_checkpoint", [flags for flags, _ in cases], prelude=info)
    for (flags, message), outcome in zip(cases, outcomes, strict=True):
        if message is None:
            assert outcome == "ok"
            continue
        assert outcome.startswith("convert_checkpoint.py: error: ") and re.search(message, outcome), (flags, outcome)
        assert "\n" not in outcome
    damaged_files = [f"damaged.ckpt{s}" for s in (".index", ".data-00000-of-00001")]
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["uncased_tiny", "folder", "file", "model.keras", "x.keras", "hf", "back.keras", *damaged_files,
         "hub", "nan_hf", "search", "other_vocab.txt"]
    )
    assert sorted(os.listdir(hub)) == hub_files
    wrote = r"Wrote a Hugging Face folder of a BertPretrainer \(BertForPreTraining\) to \S*/hf"
    written = [line[line.index(" to "):] for line in logs.splitlines() if re.match(wrote, line)]
    replaced = f" to {tmp_path / 'hf'}, replacing the one an earlier conversion wrote there"
    assert written == [f" to {tmp_path / 'hf'}", replaced]
    umask = os.umask(0)
    os.umask(umask)
    modes = {name: os.stat(tmp_path / "hf" / name).st_mode & 0o777 for name in os.listdir(tmp_path / "hf")}
    assert modes == dict.fromkeys(["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"],
                                  0o666 & ~umask)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    tokenizer = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert (config["architectures"], tokenizer["do_lower_case"]) == (["BertForPreTraining"], False)
    for a, b in zip(keras.saving.load_model(str(tmp_path / "back.keras")).weights,
                    keras.saving.load_model(str(tmp_path / "x.keras")).weights, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
