"""BERT for extractive question answering (paper §4.2-4.3, SQuAD v1.1 and v2.0), as the
original `run_squad.create_model`: start and end scores from one dense layer over the last
layer's vectors."""

import keras

from bert_tf.layers.span_head import SpanHead
from bert_tf.models.bert_encoder import BertEncoder, encoder_inputs, task_model_config, with_encoder_deserialized

# The original draws cls/squad/output_weights from a truncated normal of stddev 0.02.
HEAD_INITIALIZER_RANGE = 0.02


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanLabeler(keras.Model):
    """A `BertEncoder` and a `SpanHead` on its `sequence_output`.

    Unanswerable questions (SQuAD v2.0) point at [CLS], position 0. The head's weights are the
    original's `cls/squad/output_weights` (`[2, hidden]`) and `cls/squad/output_bias`.

    Args:
        encoder: The BertEncoder.
        initializer_range: float. The standard deviation of the head's truncated normal.
            Defaults to 0.02, the original's.
        dtype: None, a dtype name or a `keras.DTypePolicy`: the head's and the model's policy.
            None (the default) takes the encoder's.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, int32
    `[batch, seq]`; for SQuAD: [CLS] question [SEP] passage [SEP]).

    Outputs: a dict of float32 logits `[batch, seq]`, `start_logits` and `end_logits`, so that
    plain `fit` works with `keras.losses.SparseCategoricalCrossentropy(from_logits=True)` on each
    and the answer's start and end positions as targets.
    """

    def __init__(self, encoder: BertEncoder, initializer_range=HEAD_INITIALIZER_RANGE, dtype=None, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.span_head = SpanHead(
            initializer_range=initializer_range,
            dtype=dtype if dtype is not None else encoder.dtype_policy,
            name="span_head",
        )

        # === Functional model ===
        inputs = encoder_inputs()
        sequence_output = encoder(inputs)["sequence_output"]
        super().__init__(inputs=inputs, outputs=self.span_head(sequence_output), **kwargs)
        self.dtype_policy = dtype if dtype is not None else encoder.dtype_policy

        # === Config ===
        self.initializer_range = initializer_range

    def get_config(self):
        return {**task_model_config(self), "initializer_range": self.initializer_range}

    @classmethod
    def from_config(cls, config):
        return cls(**with_encoder_deserialized(config))
