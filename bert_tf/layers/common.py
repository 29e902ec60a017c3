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
