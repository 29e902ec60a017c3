"""BERT for multiple choice (paper §4.4, SWAG): each choice packed with the context as one
sequence, one score per sequence from its [CLS] vector, a softmax over the choices."""

import keras
from keras import ops

from bert_tf.layers.classification_head import ClassificationHead
from bert_tf.layers.flatten_choices import FlattenChoices
from bert_tf.models.bert_classifier import DROPOUT_RATE, HEAD_INITIALIZER_RANGE
from bert_tf.models.bert_encoder import (
    INPUT_NAMES,
    BertEncoder,
    first_row,
    last_layer_rows,
    task_model_config,
    with_encoder_deserialized,
)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertMultipleChoice(keras.Model):
    """A `BertEncoder` read once per choice and a `ClassificationHead` with one output.

    The head is the paper's vector whose dot product with each choice's pooled [CLS] vector is
    that choice's score. The choices are folded into the batch (`FlattenChoices`), and only [CLS]
    of the encoder's last layer feeds the pooler, so that layer runs for it alone.

    Args:
        encoder: The BertEncoder.
        num_choices: int. The number of choices per example (at least 2). Defaults to 4, SWAG's.
        dropout_rate: float. The dropout rate on the pooled vector before the dense layer.
            Defaults to 0.1.
        initializer_range: float. The standard deviation of the dense kernel's truncated normal.
            Defaults to 0.02.
        dtype: None, a dtype name or a `keras.DTypePolicy`: the head's and the model's policy.
            None (the default) takes the encoder's.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs: the encoder's keys (`input_word_ids`, `input_mask`, `input_type_ids`) with int32
    tensors `[batch, num_choices, seq]`, choice c of example b at `[b, c]`.

    Outputs: float32 logits `[batch, num_choices]`, so that plain `fit` works with
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)` and the right choice's index.

    Raises:
        ValueError: `num_choices` is below 2.
    """

    def __init__(
        self,
        encoder: BertEncoder,
        num_choices=4,
        dropout_rate=DROPOUT_RATE,
        initializer_range=HEAD_INITIALIZER_RANGE,
        dtype=None,
        **kwargs,
    ):
        if num_choices < 2:
            raise ValueError(f"num_choices must be at least 2, got {num_choices}")
        # === Layers ===
        self.encoder = encoder
        self.flatten_choices = FlattenChoices(name="flatten_choices")
        self.classifier = ClassificationHead(
            num_classes=1,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            dtype=dtype if dtype is not None else encoder.dtype_policy,
            name="classifier",
        )

        # === Functional model ===
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name) for name in INPUT_NAMES}
        flat = self.flatten_choices(inputs)  # [B * C, S]
        # Only [CLS] of the last layer feeds the pooler: that layer runs for it alone.
        pooled = encoder.pooler_dense(last_layer_rows(encoder, flat, first_row(flat))[:, 0, :])  # [B * C, H]
        scores = ops.reshape(self.classifier(pooled), (-1, num_choices))  # [B, C]
        super().__init__(inputs=inputs, outputs=scores, **kwargs)
        self.dtype_policy = dtype if dtype is not None else encoder.dtype_policy

        # === Config ===
        self.num_choices = num_choices
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

    def get_config(self):
        return {
            **task_model_config(self),
            "num_choices": self.num_choices,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**with_encoder_deserialized(config))
