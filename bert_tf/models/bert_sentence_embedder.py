"""BERT as a sentence encoder: one vector per text, pooled over its real tokens (the
sentence-transformers layout: a BERT module, a Pooling module, an optional Normalize)."""

import keras
from keras import ops

from bert_tf.layers.sentence_pooling import SentencePooling, l2_normalize
from bert_tf.models.bert_encoder import BertEncoder, encoder_inputs, task_model_config, with_encoder_deserialized

# sentence-transformers' MultipleNegativesRankingLoss default: cosine similarities times 20.
SIMILARITY_SCALE = 20.0


def in_batch_scores(anchors, positives, negatives=None, scale=SIMILARITY_SCALE, candidate_weights=None):
    """`(scores, right)` of the in-batch-negatives loss: scores float32 `[batch, candidates]`, the
    cosine similarities of each anchor with every positive of the batch, then every hard negative
    when given, times `scale` (a candidate of weight 0 in `candidate_weights`, a row padding the
    batch, at -1e9: no anchor's candidate); right float32 `[batch]`, each anchor's with its own
    positive (candidate i). See `in_batch_negatives_xent`."""
    candidates = positives if negatives is None else ops.concatenate([positives, negatives], axis=0)
    a = l2_normalize(ops.cast(anchors, "float32"))  # [B, H]
    c = l2_normalize(ops.cast(candidates, "float32"))  # [C, H], C = B or 2B
    scores = ops.matmul(a, ops.transpose(c)) * scale  # [B, C]
    if candidate_weights is not None:  # padding rows out of every softmax (a right one is real or ignored)
        scores = scores + (ops.cast(candidate_weights, "float32")[None, :] - 1.0) * 1e9
    right = ops.sum(a * c[: ops.shape(a)[0]], axis=-1) * scale  # [B]: each anchor's own positive
    return scores, right


def in_batch_negatives_xent(anchors, positives, negatives=None, scale=SIMILARITY_SCALE, candidate_weights=None):
    """Per-anchor cross-entropy of the in-batch-negatives contrastive loss.

    The loss of sentence-transformers' MultipleNegativesRankingLoss: anchor i's candidates are
    every positive of the batch, then every hard negative when given; its right one is positive i.
    Scores are cosine similarities times `scale`.

    Args:
        anchors: float `[batch, hidden]`.
        positives: float `[batch, hidden]`; row i is anchor i's right candidate.
        negatives: float `[batch, hidden]` (hard negatives), or None (the default) for none.
        scale: float. The factor on the cosine similarities. Defaults to 20.0
            (`SIMILARITY_SCALE`, sentence-transformers' default).
        candidate_weights: None (the default), or float `[candidates]` (the positives', then the
            negatives'): a candidate of weight 0 (a row padding the batch) is no anchor's candidate.

    Returns:
        float32 `[batch]`, each anchor's cross-entropy (the loss is their mean).
    """
    scores, right = in_batch_scores(anchors, positives, negatives, scale, candidate_weights)
    return ops.logsumexp(scores, axis=-1) - right


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSentenceEmbedder(keras.Model):
    """A `BertEncoder` and a `SentencePooling` on its `sequence_output`.

    No weights beyond the encoder's.

    Args:
        encoder: The BertEncoder.
        pooling: str. "mean", "cls", "max" or "mean_sqrt_len" (see `SentencePooling`). Defaults
            to "mean".
        normalize: bool. Whether to L2-normalize each vector (sentence-transformers' Normalize
            module). Defaults to False.
        dtype: None, a dtype name or a `keras.DTypePolicy`: the model's policy (the pooling always
            runs in float32). None (the default) takes the encoder's.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, int32
    `[batch, seq]`).

    Outputs: float32 `[batch, hidden_size]`, one vector per sequence.

    Raises:
        ValueError: `pooling` is not one of the modes above.
    """

    def __init__(self, encoder: BertEncoder, pooling="mean", normalize=False, dtype=None, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.pooler = SentencePooling(pooling, normalize, name="pooling", dtype="float32")

        # === Functional model ===
        inputs = encoder_inputs()
        sequence_output = encoder(inputs)["sequence_output"]
        super().__init__(inputs=inputs, outputs=self.pooler(sequence_output, inputs["input_mask"]), **kwargs)
        self.dtype_policy = dtype if dtype is not None else encoder.dtype_policy

        # === Config ===
        self.pooling = pooling
        self.normalize = bool(normalize)

    def get_config(self):
        return {**task_model_config(self), "pooling": self.pooling, "normalize": self.normalize}

    @classmethod
    def from_config(cls, config):
        return cls(**with_encoder_deserialized(config))
