"""BERT for sentence and sentence-pair classification (paper §4.1), as the original
`run_classifier.create_model`: dropout and one dense layer on the pooled [CLS] vector."""

import keras

from bert_tf.layers.classification_head import ClassificationHead
from bert_tf.models.bert_encoder import (
    BertEncoder,
    encoder_inputs,
    first_row,
    last_layer_rows,
    task_model_config,
    with_encoder_deserialized,
)

# The original's fine-tuning head: `tf.nn.dropout(keep_prob=0.9)` and output_weights drawn from
# a truncated normal of stddev 0.02, whatever the config's initializer_range.
DROPOUT_RATE = 0.1
HEAD_INITIALIZER_RANGE = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(keras.Model):
    """A `BertEncoder` and a `ClassificationHead` on its pooled output.

    The head's weights are the original's top-level `output_weights` (`[num_classes, hidden]`,
    the transpose of the kernel here) and `output_bias`. Only [CLS] of the encoder's last layer
    feeds the pooler, so that layer runs for it alone.

    Args:
        encoder: The BertEncoder.
        num_classes: int. The number of outputs: the number of labels (softmax or, for
            multi-label, one sigmoid each), or 1 for regression.
        dropout_rate: float. The dropout rate on the pooled vector before the dense layer.
            Defaults to 0.1, the original's.
        initializer_range: float. The standard deviation of the dense kernel's truncated normal.
            Defaults to 0.02, the original's (whatever the encoder's).
        dtype: None, a dtype name or a `keras.DTypePolicy`: the head's and the model's policy.
            None (the default) takes the encoder's.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, int32
    `[batch, seq]`).

    Outputs: float32 logits `[batch, num_classes]`, so that plain `fit` works with e.g.
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)`.

    Raises:
        ValueError: `num_classes` is below 1.
    """

    def __init__(
        self,
        encoder: BertEncoder,
        num_classes,
        dropout_rate=DROPOUT_RATE,
        initializer_range=HEAD_INITIALIZER_RANGE,
        dtype=None,
        **kwargs,
    ):
        # === Layers ===
        self.encoder = encoder
        self.classifier = ClassificationHead(
            num_classes=num_classes,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            dtype=dtype if dtype is not None else encoder.dtype_policy,
            name="classifier",
        )

        # === Functional model ===
        inputs = encoder_inputs()
        # Only [CLS] of the last layer feeds the pooler: that layer runs for it alone.
        pooled = encoder.pooler_dense(last_layer_rows(encoder, inputs, first_row(inputs))[:, 0, :])
        super().__init__(inputs=inputs, outputs=self.classifier(pooled), **kwargs)
        self.dtype_policy = dtype if dtype is not None else encoder.dtype_policy

        # === Config ===
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

    def get_config(self):
        return {
            **task_model_config(self),
            "num_classes": self.num_classes,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**with_encoder_deserialized(config))
