"""The modeling code and the optimizer run on Keras' JAX backend: same weights, same outputs,
no TensorFlow."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import BertEncoder, BertPretrainer
from tests import numpy_bert
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
import jax
from bert_tf.models import masked_lm_xent
xl, xi, xw = data["xent_logits"], data["xent_ids"], data["xent_weights"]
xent = np.asarray(masked_lm_xent(xl, xi))
xgrad = np.asarray(jax.grad(lambda l: (xw * masked_lm_xent(l, xi)).sum())(xl))
leaked = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
print(json.dumps({
    "fit_losses": losses,
    "leaked": leaked,
    "masked_lm_logits": float(np.max(np.abs(np.asarray(out["masked_lm_logits"]) - data["masked_lm_logits"]))),
    "next_sentence_logits": float(
        np.max(np.abs(np.asarray(out["next_sentence_logits"]) - data["next_sentence_logits"]))
    ),
    "sequence_output": float(np.max(np.abs(np.asarray(seq) - data["sequence_output"]))),
    "xent": float(np.max(np.abs(xent - data["xent"]))),
    "xent_gradient": float(np.max(np.abs(xgrad - data["xent_gradient"]))),
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
    # The masked-LM cross-entropy's custom gradient, one label's probability underflowing.
    xent_logits = (rng.standard_normal((2, 3, 40)) * 4).astype(np.float32)
    xent_ids = rng.integers(0, 40, size=(2, 3)).astype(np.int32)
    xent_logits[0, 1, xent_ids[0, 1]] = xent_logits[0, 1].max() - 150.0
    xent_weights = rng.uniform(0.0, 2.0, size=(2, 3)).astype(np.float32)
    log_probs = numpy_bert.log_softmax(xent_logits.astype(np.float64))
    one_hot = np.eye(40)[xent_ids]
    np.savez(
        tmp_path / "io.npz",
        **x,
        masked_lm_ids=rng.integers(5, config.vocab_size, size=x["masked_lm_positions"].shape).astype(np.int32),
        masked_lm_weights=np.ones(x["masked_lm_positions"].shape, np.float32),
        next_sentence_labels=np.zeros((x["masked_lm_positions"].shape[0], 1), np.int32),
        masked_lm_logits=np.asarray(out["masked_lm_logits"]),
        next_sentence_logits=np.asarray(out["next_sentence_logits"]),
        sequence_output=np.asarray(seq),
        xent_logits=xent_logits,
        xent_ids=xent_ids,
        xent_weights=xent_weights,
        xent=-(log_probs * one_hot).sum(-1),
        xent_gradient=xent_weights[..., None] * (np.exp(log_probs) - one_hot),
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", _JAX_SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == [], f"modeling code imported TensorFlow: {report['leaked']}"
    for key in ("masked_lm_logits", "next_sentence_logits", "sequence_output", "xent_gradient"):
        assert report[key] <= 1e-5, (key, report[key])
    assert report["xent"] <= 1e-4, report["xent"]  # values up to ~150
    # The original optimizer trains there too (step 0 has learning rate 0: warmup).
    losses = report["fit_losses"]
    assert all(np.isfinite(losses)) and losses[2] < losses[0]
