"""MultiHeadSelfAttention's two paths, `keras.ops.dot_product_attention` (no dropout on the
probabilities) and the explicit one (training with attention dropout, or the probabilities asked
for), each against the attention written out in numpy: softmax(q k^T / sqrt(H) - 10000 * (1 - mask)) v,
on TensorFlow and on the JAX backend."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from keras import ops

from bert_tf.layers import MultiHeadSelfAttention
from tests import numpy_bert

B, S, HID, HEADS = 2, 7, 16, 4
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _inputs():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((B, S, HID)).astype(np.float32)
    padding = np.ones((B, S), np.int32)
    padding[1, 4:] = 0  # the second row has 4 real tokens
    # [B, F, T]: each query sees a different set of keys (a causal mask on top of the padding).
    full = np.tril(np.ones((S, S), np.int32))[None] * padding[:, None, :]
    return x, {"none": None, "padding": padding, "full": full}


def _numpy_attention(weights, x, mask):
    """The rule stated independently: per head, softmax of scaled scores plus the additive mask."""
    wq, bq, wk, bk, wv, bv, wo, bo = (np.asarray(w, np.float64) for w in weights)
    h, (b, s, _) = HID // HEADS, x.shape

    def heads(t):  # [B, S, N*H] -> [B, N, S, H]
        return t.reshape(b, s, HEADS, h).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ wq + bq), heads(x @ wk + bk), heads(x @ wv + bv)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(h)
    if mask is not None:
        mask = mask[:, None, None, :] if mask.ndim == 2 else mask[:, None, :, :]
        scores = scores - 10000.0 * (1.0 - mask)
    context = numpy_bert.softmax(scores) @ v  # [B, N, F, H]
    return context.transpose(0, 2, 1, 3).reshape(b, s, HID) @ wo + bo


def _layer(dropout):
    layer = MultiHeadSelfAttention(HID, HEADS, attention_probs_dropout_prob=dropout)
    layer.build((B, S, HID))
    return layer


@pytest.fixture
def fused_calls(monkeypatch):
    """Counts the calls that reach keras.ops.dot_product_attention."""
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    original = ops.dot_product_attention
    monkeypatch.setattr(ops, "dot_product_attention", counting)
    return calls


@pytest.mark.parametrize("mask_name", ["none", "padding", "full"])
def test_both_paths_equal_the_numpy_attention(mask_name, fused_calls):
    x, masks = _inputs()
    mask = masks[mask_name]
    layer = _layer(dropout=0.1)
    weights = [w.numpy() for w in (*layer.query.weights, *layer.key.weights, *layer.value.weights,
                                   *layer.output_dense.weights)]
    expected = _numpy_attention(weights, x.astype(np.float64), mask)

    fused = np.asarray(layer(x, attention_mask=mask, training=False))
    assert len(fused_calls) == 1  # inference: dropout is off, the fused op runs
    explicit, probs = layer(x, attention_mask=mask, training=False, return_probs=True)
    assert len(fused_calls) == 1  # the probabilities asked for: the explicit path
    np.testing.assert_allclose(fused, expected, atol=2e-5)
    np.testing.assert_allclose(np.asarray(explicit), expected, atol=2e-5)
    assert probs.shape == (B, HEADS, S, S)
    if mask_name == "padding":  # masked keys get no weight at all
        assert np.all(np.asarray(probs)[1, :, :, 4:] < 1e-30)


def test_training_takes_the_fused_path_only_without_attention_dropout(fused_calls):
    x, masks = _inputs()
    with_dropout = _layer(dropout=0.5)
    dropped = np.asarray(with_dropout(x, attention_mask=masks["padding"], training=True))
    assert not fused_calls  # the original's dropout on the probabilities needs them
    inference = np.asarray(with_dropout(x, attention_mask=masks["padding"], training=False))
    assert len(fused_calls) == 1 and not np.allclose(dropped, inference)

    without = _layer(dropout=0.0)
    trained = np.asarray(without(x, attention_mask=masks["padding"], training=True))
    assert len(fused_calls) == 2
    explicit, _ = without(x, attention_mask=masks["padding"], training=True, return_probs=True)
    np.testing.assert_allclose(trained, np.asarray(explicit), atol=2e-6)


_JAX_SCRIPT = r"""
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np
import keras
from keras import ops
from bert_tf.layers import MultiHeadSelfAttention
assert keras.backend.backend() == "jax"
data = np.load(sys.argv[1])
layer = MultiHeadSelfAttention(16, 4, attention_probs_dropout_prob=0.1)
undropped = MultiHeadSelfAttention(16, 4, attention_probs_dropout_prob=0.0)  # trains on the fused path
for each in (layer, undropped):
    each.build((2, 7, 16))
    for w, value in zip(each.trainable_weights, (data[f"w{i}"] for i in range(8))):
        w.assign(value)
calls = []
fused = ops.dot_product_attention
def counting(*a, **k):
    calls.append([None if k.get("bias") is None else list(k["bias"].shape), k.get("flash_attention")])
    return fused(*a, **k)
ops.dot_product_attention = counting
out = {}
for length in (7, 6):  # odd, even
    for name in ("none", "padding", "full"):
        mask = data[name][(slice(None),) + (slice(length),) * (data[name].ndim - 1)] if name in data else None
        x = data["x"][:, :length]
        key = f"{name}{length}"
        out[key] = np.asarray(layer(x, attention_mask=mask, training=False)).tolist()
        out[key + "_training"] = np.asarray(undropped(x, attention_mask=mask, training=True)).tolist()
        out[key + "_explicit"] = np.asarray(layer(x, attention_mask=mask, return_probs=True)[0]).tolist()
# On a TPU (faked: the layer asks Keras for the devices) the bias stays whole and the fused kernel,
# which would drop it, is declined.
keras.distribution.list_devices = lambda *args: ["tpu:0"]
tpu = np.asarray(layer(data["x"][:, :6], attention_mask=data["padding"][:, :6], training=False))
out["tpu_matches"] = bool(np.allclose(tpu, out["padding6"], atol=1e-6))
print(json.dumps({"fused_calls": calls, **out}))
"""


@pytest.mark.slow
def test_jax_backend_paths_equal_the_numpy_attention(tmp_path):
    pytest.importorskip("jax")
    x, masks = _inputs()
    weights = [w.numpy() for w in _layer(0.1).trainable_weights]
    np.savez(tmp_path / "io.npz", x=x, **{f"w{i}": w for i, w in enumerate(weights)},
             **{k: v for k, v in masks.items() if v is not None})
    env = {**os.environ, "PYTHONPATH": REPO, "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", _JAX_SCRIPT, str(tmp_path / "io.npz")], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # Two fused calls per mask, inference then training: (the bias's shape, flash_attention). JAX's
    # cuDNN kernel takes a bias only with the scores' own lengths (F, T), and in training only even
    # ones: the padding mask's [B, 1, 1, T] bias reaches it as [B, 1, F, T] and the backend chooses,
    # except in training at an odd length, where the fused kernel is declined up front (Keras
    # would log cuDNN's refusal with a traceback). On this CPU the backend chooses XLA's ops anyway.
    assert out["fused_calls"] == [
        [None, None], [None, None],
        [[B, 1, 7, 7], None], [[B, 1, 1, 7], False],
        [[B, 1, 7, 7], None], [[B, 1, 7, 7], False],
        [None, None], [None, None],
        [[B, 1, 6, 6], None], [[B, 1, 6, 6], None],
        [[B, 1, 6, 6], None], [[B, 1, 6, 6], None],
        [[B, 1, 1, 6], False],  # the faked TPU
    ]
    assert out["tpu_matches"]
    # The layer's weights in its own order: query, key, value, output (kernel, bias each).
    for length in (7, 6):
        for name, mask in masks.items():
            if mask is not None:  # the first `length` positions (as queries and as keys)
                mask = mask[(slice(None),) + (slice(length),) * (mask.ndim - 1)]
            expected = _numpy_attention(weights, x[:, :length].astype(np.float64), mask)
            np.testing.assert_allclose(np.array(out[f"{name}{length}"]), expected, atol=2e-5)
            np.testing.assert_allclose(np.array(out[f"{name}{length}_explicit"]), expected, atol=2e-5)
            np.testing.assert_allclose(np.array(out[f"{name}{length}_training"]), expected, atol=2e-5)
