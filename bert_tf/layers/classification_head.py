"""A dense classifier on one vector per example: next-sentence prediction, GLUE-style tasks."""

import keras

from bert_tf.layers.common import truncated_normal


@keras.saving.register_keras_serializable(package="bert_tf")
class ClassificationHead(keras.layers.Layer):
    """Dropout, then a dense layer to `num_classes` logits.

    The original stores this weight as `output_weights` of shape `[num_classes, hidden]`
    (`cls/seq_relationship/output_weights` for next-sentence prediction); the kernel here is its
    transpose, `[hidden, num_classes]`, and the checkpoint converter transposes. The dense layer
    runs in float32 whatever the dtype policy.

    Args:
        num_classes: int. The number of logits per example (at least 1).
        dropout_rate: float. The dropout rate on the inputs. Defaults to 0.0 (no dropout).
        initializer_range: float. The standard deviation of the kernel's truncated normal
            initializer. Defaults to 0.02.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `[batch, hidden]` (usually `pooled_output`).
        training: whether dropout is active.

    Returns:
        float32 logits `[batch, num_classes]`.

    Raises:
        ValueError: At construction, when `num_classes` is below 1.
    """

    def __init__(self, num_classes, dropout_rate=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if num_classes < 1:
            raise ValueError(f"num_classes must be positive, got {num_classes}")
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

    def build(self, inputs_shape):
        self.dropout = keras.layers.Dropout(self.dropout_rate, dtype=self.dtype_policy)
        self.dense = keras.layers.Dense(
            self.num_classes,
            kernel_initializer=truncated_normal(self.initializer_range),
            dtype="float32",
            name="logits",
        )
        self.dense.build(inputs_shape)
        self.built = True

    def call(self, inputs, training=None):
        return self.dense(self.dropout(inputs, training=training))

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
