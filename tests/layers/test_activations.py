import math

import numpy as np
import pytest

from bert_tf.layers import gelu, gelu_exact, get_activation


def test_gelu_is_the_original_tanh_approximation():
    x = np.linspace(-6, 6, 1001).astype(np.float32)
    expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x.astype(np.float64) ** 3)))
    np.testing.assert_allclose(np.asarray(gelu(x)), expected, atol=1e-6)


def test_gelu_gives_the_originals_floats_on_tensorflow():
    # modeling.gelu of the original release, in its TensorFlow operations and order: our gelu
    # (keras.ops.gelu, the form oneDNN fuses) must give bit-identical float32 values.
    import tensorflow as tf

    x = tf.constant(np.random.default_rng(0).standard_normal(200_000).astype(np.float32) * 4)
    cdf = 0.5 * (1.0 + tf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * tf.pow(x, 3))))
    np.testing.assert_array_equal(np.asarray(gelu(x)), (x * cdf).numpy())


def test_gelu_exact_uses_erf():
    x = np.linspace(-6, 6, 101).astype(np.float32)
    expected = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    np.testing.assert_allclose(np.asarray(gelu_exact(x)), expected, atol=1e-6)
    assert np.max(np.abs(np.asarray(gelu(x)) - expected)) > 1e-4  # the two really differ


@pytest.mark.parametrize("name, fn", [("relu", lambda v: np.maximum(v, 0)), ("tanh", np.tanh), ("linear", lambda v: v)])
def test_other_activations(name, fn):
    x = np.linspace(-3, 3, 13).astype(np.float32)
    np.testing.assert_allclose(np.asarray(get_activation(name)(x)), fn(x), atol=1e-6)


def test_unknown_activation():
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        get_activation("swish")
