"""`import bert_tf` alone registers every layer and model: a `.keras` file of any of them loads
in a fresh process after it, on another backend than the one that wrote it."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import BertClassifier, BertEncoder
from bert_tf.checkpoints import save_keras_model
from tests.tiny import encoder_part, tiny_config, tiny_inputs

pytest.importorskip("jax")

_LOAD = r"""
import json, sys
import numpy as np
import keras
import bert_tf  # the only import of this package
model = keras.saving.load_model(sys.argv[1])
data = np.load(sys.argv[2])
out = model({k: data[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}, training=False)
leaked = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
print(json.dumps({"backend": keras.backend.backend(), "type": type(model).__name__,
                  "diff": float(np.abs(np.asarray(out) - data["logits"]).max()), "leaked": leaked}))
"""


@pytest.mark.slow
def test_import_bert_tf_alone_lets_keras_load_its_models_on_another_backend(tmp_path):
    model = BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=3)
    x = encoder_part(tiny_inputs(tiny_config()))
    path = save_keras_model(model, str(tmp_path / "classifier.keras"))
    np.savez(tmp_path / "io.npz", **x, logits=np.asarray(model(x, training=False)))
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-c", _LOAD, path, str(tmp_path / "io.npz")], capture_output=True, text=True, env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["backend"] == "jax" and report["type"] == "BertClassifier"
    assert report["diff"] <= 1e-5
    assert report["leaked"] == []  # on JAX, importing bert_tf does not start TensorFlow
