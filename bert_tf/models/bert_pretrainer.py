"""BERT with its two pre-training heads and the original's losses (paper §3.1)."""

import keras
from keras import ops

from bert_tf.layers.classification_head import ClassificationHead
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.models.bert_encoder import (
    BertEncoder,
    encoder_inputs,
    first_row,
    last_layer_rows,
    task_model_config,
    with_encoder_deserialized,
)

# The original adds this to the weight sum so that a batch with no masked token gives 0, not NaN.
MASKED_LM_DENOMINATOR_EPSILON = 1e-5
# The smallest normal float32: a probability below it has lost precision (or is 0).
_FLOAT32_TINY = 1.1754944e-38


def masked_lm_xent(logits, masked_lm_ids):
    """Per-prediction cross-entropy, float32 `[batch, predictions]`, as the original computes it.

    The original's -sum(one_hot(ids) * log_softmax(logits)), computed from one softmax over the
    vocabulary, kept for the gradient (softmax - one_hot): the loss is -log(p[id]), or
    logsumexp(logits) - logits[id] for a batch where some p[id] underflows float32 (a logit gap
    beyond ~87), so the value stays finite as the original's. On TensorFlow/CPU this takes 22 ms
    forward and backward for 640 predictions over a 30,522-word vocabulary where the fused sparse
    cross-entropy kernel takes 60 ms.

    Args:
        logits: float `[batch, predictions, vocab]` (cast to float32).
        masked_lm_ids: int `[batch, predictions]`, the right token id of each prediction.

    Returns:
        float32 `[batch, predictions]`: each prediction's cross-entropy (padding predictions
        included: the caller weighs them).
    """
    logits = ops.cast(logits, "float32")
    ids = ops.cast(masked_lm_ids, "int32")

    def at_ids(x):  # x[..., id] for each prediction
        return ops.take_along_axis(x, ids[..., None], axis=-1)[..., 0]

    @ops.custom_gradient
    def xent(logits):
        probs = ops.softmax(logits, axis=-1)
        picked = at_ids(probs)
        loss = ops.cond(
            ops.all(picked >= _FLOAT32_TINY),
            lambda: -ops.log(picked),
            lambda: ops.logsumexp(logits, axis=-1) - at_ids(logits),
        )

        def grad(*args, upstream=None):
            upstream = args[0] if upstream is None else upstream
            one_hot = ops.one_hot(ids, ops.shape(logits)[-1], dtype="float32")
            return (probs - one_hot) * upstream[..., None]

        return loss, grad

    return xent(logits)


def next_sentence_xent(logits, next_sentence_labels):
    """Per-example 2-way cross-entropy, float32 `[batch]` (label 1 = random B).

    Args:
        logits: float `[batch, 2]` (cast to float32).
        next_sentence_labels: int `[batch]` or `[batch, 1]`: 0 when B follows A, 1 when B is a
            random sentence.

    Returns:
        float32 `[batch]`: each example's cross-entropy.
    """
    labels = ops.reshape(ops.cast(next_sentence_labels, "int32"), (-1,))
    return ops.sparse_categorical_crossentropy(labels, ops.cast(logits, "float32"), from_logits=True)


def masked_lm_loss(logits, masked_lm_ids, masked_lm_weights):
    """The original's masked-LM loss: sum(weights * xent) / (sum(weights) + 1e-5), float32.

    The 1e-5 (`MASKED_LM_DENOMINATOR_EPSILON`) makes a batch with no masked token give 0, not NaN.

    Args:
        logits: float `[batch, predictions, vocab]`.
        masked_lm_ids: int `[batch, predictions]`, the right token id of each prediction.
        masked_lm_weights: float `[batch, predictions]`, 1 for a real prediction, 0 for padding.

    Returns:
        A float32 scalar: the weighted mean of `masked_lm_xent`.
    """
    weights = ops.cast(masked_lm_weights, "float32")
    xent = masked_lm_xent(logits, masked_lm_ids)
    return ops.sum(weights * xent) / (ops.sum(weights) + MASKED_LM_DENOMINATOR_EPSILON)


def next_sentence_loss(logits, next_sentence_labels):
    """The original's next-sentence loss: the mean 2-way cross-entropy.

    Args:
        logits: float `[batch, 2]`.
        next_sentence_labels: int `[batch]` or `[batch, 1]`, 1 when B is a random sentence.

    Returns:
        A float32 scalar: the mean of `next_sentence_xent` over the batch.
    """
    return ops.mean(next_sentence_xent(logits, next_sentence_labels))


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(keras.Model):
    """A `BertEncoder` with the original's two pre-training heads, as `run_pretraining.model_fn`.

    The masked-LM head (tied to the word embeddings) and the next-sentence head read only the
    masked positions and (with next-sentence prediction) the first token of the encoder's last
    layer, which runs for those rows alone.

    Args:
        encoder: The BertEncoder. The masked-LM head takes its sizes, activation, initializer range
            and word-embedding table from it.
        dtype: None, a dtype name or a `keras.DTypePolicy`: the heads' and the model's policy.
            None (the default) takes the encoder's.
        next_sentence_prediction: bool. False drops the next-sentence head and loss: the masked LM
            alone (the paper's "No NSP", §5.1), trained on the same records. Defaults to True.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs (a dict): the encoder's three inputs plus
        masked_lm_positions: int32 `[batch, num_predictions]`.

    Outputs (a dict):
        masked_lm_logits: float32 `[batch, num_predictions, vocab_size]`.
        next_sentence_logits: float32 `[batch, 2]` (only with next_sentence_prediction).

    Training: `fit` with `x` = the inputs and `y` = a dict of `masked_lm_ids`,
    `masked_lm_weights` and `next_sentence_labels` (not needed without next-sentence
    prediction); `compute_loss` returns the original's total (masked-LM loss + next-sentence
    loss, plus the model's added losses if any), so `compile` needs only an optimizer. It raises
    a ValueError when `y` is None.
    """

    def __init__(self, encoder: BertEncoder, dtype=None, next_sentence_prediction=True, **kwargs):
        dtype_policy = dtype if dtype is not None else encoder.dtype_policy
        # === Layers ===
        self.encoder = encoder
        self.masked_lm = MaskedLMHead(
            vocab_size=encoder.vocab_size,
            hidden_size=encoder.hidden_size,
            hidden_act=encoder.hidden_act,
            initializer_range=encoder.initializer_range,
            embedding_layer=encoder.embeddings,
            dtype=dtype_policy,
            name="masked_lm",
        )
        self.next_sentence = None
        if next_sentence_prediction:
            self.next_sentence = ClassificationHead(
                num_classes=2, initializer_range=encoder.initializer_range, dtype=dtype_policy, name="next_sentence"
            )

        # === Functional model ===
        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_lm_positions"
        )
        # The heads read only the first token and the masked positions of the last layer.
        if next_sentence_prediction:
            rows = ops.concatenate([first_row(inputs), inputs["masked_lm_positions"]], axis=1)
            last = last_layer_rows(encoder, inputs, rows)  # [batch, 1 + predictions, hidden]
            outputs = {
                "masked_lm_logits": self.masked_lm(last[:, 1:, :]),
                "next_sentence_logits": self.next_sentence(encoder.pooler_dense(last[:, 0, :])),
            }
        else:
            last = last_layer_rows(encoder, inputs, inputs["masked_lm_positions"])  # [batch, predictions, hidden]
            outputs = {"masked_lm_logits": self.masked_lm(last)}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = dtype_policy

        # === Config ===
        self.next_sentence_prediction = next_sentence_prediction

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if y is None:
            names = "'masked_lm_ids', 'masked_lm_weights'"
            if self.next_sentence_prediction:
                names += ", 'next_sentence_labels'"
            raise ValueError(f"BertPretrainer needs labels: y = {{{names}}}")
        losses = self.pretraining_losses(y, y_pred)
        total = losses["masked_lm_loss"]
        if "next_sentence_loss" in losses:
            total = total + losses["next_sentence_loss"]
        if self.losses:
            total = total + ops.sum(ops.stack([ops.cast(loss, "float32") for loss in self.losses]))
        return total

    @staticmethod
    def pretraining_losses(labels, outputs):
        """The losses of the original, as a dict of float32 scalars.

        Args:
            labels: A dict with `masked_lm_ids` and `masked_lm_weights` (int and float
                `[batch, num_predictions]`), and `next_sentence_labels` (int `[batch]` or `[batch, 1]`)
                when `outputs` has next-sentence logits.
            outputs: The model's outputs: `masked_lm_logits`, and `next_sentence_logits` when it
                predicts the next sentence.

        Returns:
            A dict with `masked_lm_loss` (`masked_lm_loss`), and `next_sentence_loss`
            (`next_sentence_loss`) when `outputs` has next-sentence logits.
        """
        losses = {
            "masked_lm_loss": masked_lm_loss(
                outputs["masked_lm_logits"], labels["masked_lm_ids"], labels["masked_lm_weights"]
            )
        }
        if "next_sentence_logits" in outputs:
            losses["next_sentence_loss"] = next_sentence_loss(
                outputs["next_sentence_logits"], labels["next_sentence_labels"]
            )
        return losses

    def get_config(self):
        return {**task_model_config(self), "next_sentence_prediction": self.next_sentence_prediction}

    @classmethod
    def from_config(cls, config):
        return cls(**with_encoder_deserialized(config))
