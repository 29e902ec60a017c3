"""Answer-span scores for extractive question answering (paper §4.2, SQuAD)."""

import keras
from keras import ops

from bert_tf.layers.common import truncated_normal


@keras.saving.register_keras_serializable(package="bert_tf")
class SpanHead(keras.layers.Layer):
    """One dense layer to two scores per token: where the answer starts and where it ends.

    The paper's start vector S and end vector E are the two rows of the original's
    `cls/squad/output_weights` (`[2, hidden]`; the kernel here is its transpose,
    `[hidden, 2]`) with `cls/squad/output_bias` (`[2]`). There is no dropout: the original's
    `run_squad.create_model` puts none before this layer.

    Args:
        initializer_range: float. The standard deviation of the kernel's truncated normal
            initializer. Defaults to 0.02.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `[batch, seq, hidden]` (the encoder's `sequence_output`).

    Returns:
        A dict of float32 tensors `[batch, seq]`: `start_logits`, `end_logits`.
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, inputs_shape):
        self.dense = keras.layers.Dense(
            2, kernel_initializer=truncated_normal(self.initializer_range), dtype="float32", name="logits"
        )
        self.dense.build(inputs_shape)
        self.built = True

    def call(self, inputs):
        logits = self.dense(ops.cast(inputs, "float32"))  # [B, S, 2]
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}

    def compute_output_spec(self, inputs):
        shape = inputs.shape[:-1]
        spec = keras.KerasTensor(shape, dtype="float32")
        return {"start_logits": spec, "end_logits": keras.KerasTensor(shape, dtype="float32")}

    def get_config(self):
        config = super().get_config()
        config.update(initializer_range=self.initializer_range)
        return config
