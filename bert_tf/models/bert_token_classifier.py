"""BERT for token classification (paper §5.3, CoNLL-2003 NER): one dense layer over the tags on
every final hidden vector; the task reads each word's first sub-token."""

import keras

from bert_tf.layers.token_classification_head import TokenClassificationHead
from bert_tf.models.bert_classifier import DROPOUT_RATE, HEAD_INITIALIZER_RANGE
from bert_tf.models.bert_encoder import BertEncoder, encoder_inputs, task_model_config, with_encoder_deserialized


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(keras.Model):
    """A `BertEncoder` and a `TokenClassificationHead` on its `sequence_output`.

    Args:
        encoder: The BertEncoder.
        num_classes: int. The number of tags (softmax over them at each position).
        dropout_rate: float. The dropout rate on the vectors before the dense layer. Defaults to
            0.1, as the classifier.
        initializer_range: float. The standard deviation of the dense kernel's truncated normal.
            Defaults to 0.02.
        dtype: None, a dtype name or a `keras.DTypePolicy`: the head's and the model's policy.
            None (the default) takes the encoder's.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, int32
    `[batch, seq]`).

    Outputs: float32 logits `[batch, seq, num_classes]`, so that plain `fit` works with
    `keras.losses.SparseCategoricalCrossentropy(from_logits=True)`, tag ids `[batch, seq]` as
    targets and, as `sample_weight`, 1 on each word's first sub-token and 0 elsewhere.

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
        self.classifier = TokenClassificationHead(
            num_classes=num_classes,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            dtype=dtype if dtype is not None else encoder.dtype_policy,
            name="classifier",
        )

        # === Functional model ===
        inputs = encoder_inputs()
        sequence_output = encoder(inputs)["sequence_output"]
        super().__init__(inputs=inputs, outputs=self.classifier(sequence_output), **kwargs)
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
