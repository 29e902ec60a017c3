"""Activation functions by the names `BertConfig.hidden_act` accepts (keras.ops only)."""

import math

from keras import ops

from bert_tf.config import ACTIVATIONS


def gelu(x):
    """GELU, tanh approximation, computed exactly as the original release's `modeling.gelu`.

    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), same operation order, so outputs
    agree with the original checkpoints' activations to float32 rounding.
    """
    cdf = 0.5 * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * ops.power(x, 3))))
    return x * cdf


def gelu_exact(x):
    """GELU with the erf: x * Phi(x)."""
    return ops.gelu(x, approximate=False)


def linear(x):
    return x


_FUNCTIONS = {
    "gelu": gelu,
    "gelu_exact": gelu_exact,
    "relu": ops.relu,
    "tanh": ops.tanh,
    "linear": linear,
}
assert set(_FUNCTIONS) == set(ACTIVATIONS)


def get_activation(name):
    """Returns the activation function called `name` (one of `bert_tf.config.ACTIVATIONS`)."""
    try:
        return _FUNCTIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown activation {name!r}; expected one of {', '.join(ACTIVATIONS)}"
        ) from None
