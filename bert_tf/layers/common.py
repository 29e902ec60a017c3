"""Small pieces every BERT layer shares: the original's initializer and LayerNorm."""

import keras
from keras import ops

# tf.contrib.layers.layer_norm, which the original release uses, hard-codes this epsilon.
LAYER_NORM_EPSILON = 1e-12


def truncated_normal(stddev):
    """The original's initializer for every kernel and table: normal truncated at 2 std."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def layer_norm(name):
    """LayerNorm over the last axis that always runs (and returns) float32.

    Under a mixed-precision policy this keeps the normalisation and the residual stream in
    float32, as TF Model Garden does; the next dense layer casts back to the compute dtype.
    """
    return keras.layers.LayerNormalization(
        axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name
    )


def gather_rows(x, positions):
    """`x[b, positions[b, i], :]`: `[B, S, D]`, int `[B, F]` -> `[B, F, D]`."""
    return ops.take_along_axis(x, ops.cast(positions, "int32")[:, :, None], axis=1)


def self_attention_output_spec(inputs, num_heads, dtype, return_probs, query_positions=None, output_rows=None):
    """Symbolic outputs of a self-attention layer/block: `[B, F, hidden]` (F = S, or the number
    of `query_positions`; `[R, hidden]` for R `output_rows`), and with `return_probs` the float32
    probabilities `[B, N, F, S]`."""
    batch, seq = inputs.shape[0], inputs.shape[1]
    queries = seq if query_positions is None else query_positions.shape[1]
    if output_rows is None:
        output = keras.KerasTensor((batch, queries) + tuple(inputs.shape[2:]), dtype=dtype)
    else:
        output = keras.KerasTensor((output_rows.shape[0],) + tuple(inputs.shape[2:]), dtype=dtype)
    if not return_probs:
        return output
    return output, keras.KerasTensor((batch, num_heads, queries, seq), dtype="float32")
