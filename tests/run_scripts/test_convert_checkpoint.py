import json

import keras
import numpy as np
import pytest

from bert_tf import BertPretrainer
from tests import numpy_bert
from tests.run_scripts.conftest import run_script
from tests.tf1_checkpoint import original_shapes, read_tf1_checkpoint
from tests.tiny import tiny_inputs

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
    layers, pooled = numpy_bert.bert(model.weights, model.config, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
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


def test_to_keras_needs_a_config(google_model_dir, tmp_path):
    result = run_script(
        "convert_checkpoint.py",
        "--direction=to_keras",
        f"--checkpoint_to_convert={google_model_dir.prefix}",
        f"--converted_checkpoint_path={tmp_path / 'x.keras'}",
    )
    assert result.returncode != 0 and "--direction=to_keras needs --bert_config_file" in result.stderr
