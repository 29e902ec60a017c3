"""The original optimizer and schedule against a numpy statement of optimization.py's rules."""

import keras
import numpy as np
import pytest

from bert_tf import BertEncoder, BertPretrainer
from bert_tf.training import LAMB, AdamWeightDecay, WarmupLinearDecay, create_optimizer
from tests.tiny import tiny_config, tiny_inputs


def numpy_lr(step, init_lr, total, warmup):
    if warmup and step < warmup:
        return init_lr * step / warmup
    return init_lr * (1.0 - min(step, total) / total)


def test_schedule_warms_up_then_decays_linearly_to_zero():
    schedule = WarmupLinearDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    for step in [0, 1, 5, 9, 10, 11, 50, 99, 100, 150]:
        assert float(schedule(step)) == pytest.approx(numpy_lr(step, 1e-3, 100, 10), abs=1e-9)
    # Hand-checked points: mid-warmup, the first decayed step, the end.
    assert float(schedule(5)) == pytest.approx(5e-4) and float(schedule(10)) == pytest.approx(9e-4)
    assert float(schedule(100)) == 0.0
    assert float(WarmupLinearDecay(1e-3, 100, 0)(0)) == pytest.approx(1e-3)
    assert WarmupLinearDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()


def _model():
    inputs = keras.Input((3,))
    x = keras.layers.Dense(4, name="dense")(inputs)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    return keras.Model(inputs, x)


def _grads(variables, step):
    rng = np.random.default_rng(step)
    return [rng.normal(0, 0.8, tuple(v.shape)).astype(np.float32) for v in variables]


def _numpy_adamw(params, grads_by_step, paths, lrs, rate=0.01, b1=0.9, b2=0.999, eps=1e-6, kernel=False):
    """optimization.py's rule; kernel: with (1 - b) rounded to float32 as TensorFlow's Adam kernel takes it."""
    c1, c2 = (float(np.float32(1) - np.float32(b)) if kernel else 1 - b for b in (b1, b2))
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    params = [p.astype(np.float64) for p in params]
    for grads, lr in zip(grads_by_step, lrs, strict=True):
        norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads))
        grads = [g * (1.0 / max(norm, 1.0)) for g in grads]  # tf.clip_by_global_norm(., 1.0)
        for i, g in enumerate(grads):
            m[i] = (1 - c1) * m[i] + c1 * g
            v[i] = (1 - c2) * v[i] + c2 * g * g
            update = m[i] / (np.sqrt(v[i]) + eps)  # no bias correction, as the original
            if not any(s in paths[i] for s in ("LayerNorm", "layer_norm", "bias")):
                update = update + rate * params[i]
            params[i] = params[i] - lr * update
    return params


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the fused kernel is TensorFlow's")
def test_the_fused_update_is_the_kernels_rule_not_the_keras_ops_one():
    # With beta_2 = 0.9999, float32 (1 - beta_2) is 1.00017e-4: the two rules part by more than the tolerance.
    model = _model()
    variables = model.trainable_variables
    paths = [v.path for v in variables]
    start = [keras.ops.convert_to_numpy(v) for v in variables]
    grads = [_grads(variables, step) for step in range(4)]
    optimizer = AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.01, beta_2=0.9999)
    for g in grads:
        optimizer.apply(g, variables)
    got = [keras.ops.convert_to_numpy(v) for v in variables]
    for kernel in (True, False):
        expected = _numpy_adamw(start, grads, paths, [0.1] * 4, b2=0.9999, kernel=kernel)
        close = all(np.allclose(a, e, rtol=1e-5, atol=1e-6) for a, e in zip(got, expected, strict=True))
        assert close is kernel


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the fused kernel is TensorFlow's")
def test_the_fused_update_takes_an_embeddings_sparse_gradient():
    import tensorflow as tf

    table = keras.Variable(np.ones((5, 3), np.float32), name="embeddings")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table.value, [1, 3, 3]) * 2.0)
    gradient = tape.gradient(loss, table.value)
    assert isinstance(gradient, tf.IndexedSlices)
    AdamWeightDecay(learning_rate=0.1, weight_decay_rate=0.0, global_clipnorm=None).apply([gradient], [table])
    # Rows 1 and 3 get gradients 2 and 4 (row 3 is gathered twice), the others none: after one step
    # m = c1 g and v = c2 g^2 (c: the kernel's float32 1 - beta), the weights move by 0.1 m / (sqrt(v) + eps).
    c1, c2 = (float(np.float32(1) - np.float32(b)) for b in (0.9, 0.999))
    expected = np.ones((5, 3))
    for row, g in ((1, 2.0), (3, 4.0)):
        expected[row] -= 0.1 * c1 * g / (np.sqrt(c2 * g * g) + 1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(table), expected, rtol=1e-5)


@pytest.mark.parametrize("fused", [False, True])
def test_adamw_matches_the_original_update_rule(fused):
    model = _model()
    variables = model.trainable_variables
    paths = [v.path for v in variables]
    assert paths == ["dense/kernel", "dense/bias", "layer_norm/gamma", "layer_norm/beta"]
    start = [keras.ops.convert_to_numpy(v) for v in variables]
    schedule = WarmupLinearDecay(0.1, num_train_steps=10, num_warmup_steps=2)
    optimizer = AdamWeightDecay(learning_rate=schedule, weight_decay_rate=0.01, fused=fused)
    grads = [_grads(variables, step) for step in range(4)]
    for g in grads:
        optimizer.apply(g, variables)
    lrs = [numpy_lr(s, 0.1, 10, 2) for s in range(4)]
    expected = _numpy_adamw(start, grads, paths, lrs, kernel=fused and keras.backend.backend() == "tensorflow")
    for v, e in zip(variables, expected, strict=True):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(v), e, rtol=1e-5, atol=1e-6)
    assert int(optimizer.iterations) == 4
    assert optimizer.decays(variables[0]) and not any(optimizer.decays(v) for v in variables[1:])
    # The fused kernel's rounding of (1 - beta_2) moves the weights by at most a few 1e-6 here (learning rate 0.1).
    original = _numpy_adamw(start, grads, paths, lrs)
    assert max(np.max(np.abs(e - o)) for e, o in zip(expected, original, strict=True)) < 2e-5
    assert AdamWeightDecay.from_config(optimizer.get_config()).fused is fused


def test_lamb_scales_each_update_by_the_trust_ratio():
    model = _model()
    variables = model.trainable_variables
    start = [keras.ops.convert_to_numpy(v).astype(np.float64) for v in variables]
    optimizer = LAMB(learning_rate=0.01, weight_decay_rate=0.01, global_clipnorm=None)
    g = _grads(variables, 0)
    optimizer.apply(g, variables)
    # Step 1: bias-corrected m_hat = g, v_hat = g^2, so update = g / (|g| + eps) (+ decay).
    for i, (v, w0, gi) in enumerate(zip(variables, start, g, strict=True)):
        update = gi / (np.abs(gi) + 1e-6)
        ratio = 1.0
        if i == 0:  # the kernel: decayed and layer-adapted
            update = update + 0.01 * w0
            ratio = np.linalg.norm(w0) / np.linalg.norm(update)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(v), w0 - 0.01 * ratio * update, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_trains_the_pretrainer_with_fit_and_round_trips():
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    optimizer = create_optimizer("adamw", 5e-3, num_train_steps=40, num_warmup_steps=4)
    model.compile(optimizer=optimizer)
    x = tiny_inputs(config, batch=8)
    rng = np.random.default_rng(0)
    y = {
        "masked_lm_ids": rng.integers(5, config.vocab_size, size=(8, 4)).astype(np.int32),
        "masked_lm_weights": np.ones((8, 4), np.float32),
        "next_sentence_labels": rng.integers(0, 2, size=(8, 1)).astype(np.int32),
    }
    history = model.fit(x, y, batch_size=8, epochs=30, verbose=0)
    assert history.history["loss"][-1] < 0.6 * history.history["loss"][0]
    clone = AdamWeightDecay.from_config(optimizer.get_config())
    assert clone.weight_decay_rate == 0.01 and clone.exclude_from_weight_decay == ["LayerNorm", "layer_norm", "bias"]
    assert clone.get_config()["learning_rate"] == optimizer.get_config()["learning_rate"]  # the schedule
    assert clone.get_config()["learning_rate"]["config"] == {
        "init_lr": 5e-3,
        "num_train_steps": 40,
        "num_warmup_steps": 4,
    }
    with pytest.raises(ValueError, match="unknown optimizer 'sgd'"):
        create_optimizer("sgd", 1e-3, 10, 1)
