"""Small pieces every BERT layer shares: the original's initializer and LayerNorm."""

import keras

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


def self_attention_output_spec(inputs, num_heads, dtype, return_probs):
    """Symbolic outputs of a self-attention layer/block: `[B, S, hidden]`, and with
    `return_probs` the float32 probabilities `[B, N, S, S]`."""
    output = keras.KerasTensor(inputs.shape, dtype=dtype)
    if not return_probs:
        return output
    batch, seq = inputs.shape[0], inputs.shape[1]
    return output, keras.KerasTensor((batch, num_heads, seq, seq), dtype="float32")
