"""The modeling code and the optimizer run on Keras' JAX backend: same weights, same outputs,
no TensorFlow."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import BertEncoder, BertPretrainer
from tests.tiny import tiny_config, tiny_inputs

pytest.importorskip("jax")

_JAX_SCRIPT = r"""
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np
import keras
from bert_tf import BertConfig, BertEncoder, BertPretrainer
assert keras.backend.backend() == "jax", keras.backend.backend()
work = sys.argv[1]
config = BertConfig.from_json_file(os.path.join(work, "bert_config.json"))
model = BertPretrainer(BertEncoder.from_bert_config(config))
model.load_weights(os.path.join(work, "tf.weights.h5"))
data = np.load(os.path.join(work, "io.npz"))
x = {k: data[k] for k in ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")}
out = model(x, training=False)
seq = model.encoder({k: x[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})["sequence_output"]
from bert_tf.training import create_optimizer
model.compile(optimizer=create_optimizer("adamw", 1e-3, num_train_steps=10, num_warmup_steps=1))
labels = {k: data[k] for k in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")}
losses = model.fit(x, labels, epochs=3, verbose=0).history["loss"]
leaked = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
print(json.dumps({
    "fit_losses": losses,
    "leaked": leaked,
    "masked_lm_logits": float(np.max(np.abs(np.asarray(out["masked_lm_logits"]) - data["masked_lm_logits"]))),
    "next_sentence_logits": float(np.max(np.abs(np.asarray(out["next_sentence_logits"]) - data["next_sentence_logits"]))),
    "sequence_output": float(np.max(np.abs(np.asarray(seq) - data["sequence_output"]))),
}))
"""


@pytest.mark.slow
def test_jax_backend_loads_tensorflow_weights_and_matches(tmp_path):
    config = tiny_config()
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    x = tiny_inputs(config)
    out = model(x, training=False)
    seq = model.encoder({k: x[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})["sequence_output"]
    model.save_weights(str(tmp_path / "tf.weights.h5"))
    config.to_json_file(str(tmp_path / "bert_config.json"))
    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "io.npz",
        **x,
        masked_lm_ids=rng.integers(5, config.vocab_size, size=x["masked_lm_positions"].shape).astype(np.int32),
        masked_lm_weights=np.ones(x["masked_lm_positions"].shape, np.float32),
        next_sentence_labels=np.zeros((x["masked_lm_positions"].shape[0], 1), np.int32),
        masked_lm_logits=np.asarray(out["masked_lm_logits"]),
        next_sentence_logits=np.asarray(out["next_sentence_logits"]),
        sequence_output=np.asarray(seq),
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", _JAX_SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == [], f"modeling code imported TensorFlow: {report['leaked']}"
    for key in ("masked_lm_logits", "next_sentence_logits", "sequence_output"):
        assert report[key] <= 1e-5, (key, report[key])
    # The original optimizer trains there too (step 0 has learning rate 0: warmup).
    losses = report["fit_losses"]
    assert all(np.isfinite(losses)) and losses[2] < losses[0]
