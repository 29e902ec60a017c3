"""Sentence embeddings as a task of the one loop: a BertSentenceEmbedder fine-tuned with the
in-batch-negatives contrastive loss (sentence-transformers' MultipleNegativesRankingLoss).

Each batch packs its anchors, positives and (when given) hard negatives as single-segment
sequences (`[CLS] text [SEP]`, tokenized in graph) into one encoder batch of 2 or 3 times its
rows, cut to its longest sequence (`length_bucket`); the model embeds them all in one call and the
loss splits the vectors again. Anchor i's candidates are every positive and negative of its batch
on its replica (as sentence-transformers on one device; gradient accumulation's micro-batches
each form their own candidates); rows of weight 0 (the padding of the last eval batch) are no one's
candidate and count nowhere.

Evaluation (`eval_results`): on pairs, each real anchor retrieves among all positives of the
file by cosine similarity: `recall_at_1`, `recall_at_10`, `mrr_at_10`, and `eval_loss` (the
in-batch loss over eval batches, which depends on their size); on scored pairs, `spearman` and
`pearson` of the pairs' cosine similarities with their scores. Prediction: one vector per text.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data.batching import array_dataset, carried
from bert_tf.data.lengths import cut_padding
from bert_tf.errors import shown
from bert_tf.layers.sentence_pooling import SentencePooling, l2_normalize
from bert_tf.models import INPUT_NAMES, BertEncoder, BertSentenceEmbedder
from bert_tf.models.bert_sentence_embedder import SIMILARITY_SCALE, in_batch_scores
from bert_tf.preprocessing.text_windows import WINDOW_COUNT, WINDOW_TEXT, check_windows, default_stride, pool_windows
from bert_tf.tasks.classifier import metrics
from bert_tf.tasks.classifier.inputs import TextPacker, window_counts
from bert_tf.tasks.embedder.reader import ANCHOR, NEGATIVE, POSITIVE, TEXT, Pairs, ScoredPairs
from bert_tf.training.settings import padding_settings
from bert_tf.training.task import Task

# The retrieval figures' cut-offs (recall_at_K, mrr_at_10).
RECALL_AT = (1, 10)
MRR_AT = 10
_SCORE = "score"


def features(data):
    """Pairs, ScoredPairs or a sequence of texts -> the dict of numpy arrays `EmbedderTask.dataset`
    reads: `anchor`, `positive` (and `negative`) for pairs; `anchor`, `positive` and `score` for
    scored pairs (sentence1 retrieves nothing: it is embedded as an anchor, sentence2 as a
    positive); `text` for texts."""
    column = lambda values: np.array(list(values), dtype=object)  # noqa: E731
    if isinstance(data, Pairs):
        out = {ANCHOR: column(data.anchor), POSITIVE: column(data.positive)}
        if data.negative is not None:
            out[NEGATIVE] = column(data.negative)
        return out
    if isinstance(data, ScoredPairs):
        return {ANCHOR: column(data.sentence1), POSITIVE: column(data.sentence2), _SCORE: data.score}
    return {TEXT: column(data)}


def window_vectors(vectors, input_mask, window_text, num_texts, normalize):
    """float32 `[texts, hidden]`: each text's windows' `vectors` (float32 `[windows, hidden]`, as
    the model pools them, not normalized) averaged with weights their real tokens (`input_mask`,
    int `[windows, seq]`), then L2-normalized when `normalize`."""
    tokens = tf.reduce_sum(tf.cast(input_mask, tf.float32), axis=-1)  # [W]
    pooled = pool_windows(vectors, window_text, num_texts, "mean", tokens)
    return l2_normalize(pooled) if normalize else pooled


def _unit_rows(vectors):
    """Each row over its L2 norm, in float64: float32 vectors beyond 1e19 (finite, so the model's
    outputs pass the trainer's check) would overflow a float32 norm to Inf and their cosines to 0
    or NaN. A NaN or Inf row stays non-finite."""
    x = np.asarray(vectors, np.float64)
    with np.errstate(invalid="ignore"):  # an Inf row over its Inf norm: NaN, as wanted
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def retrieval_figures(anchors, positives):
    """recall_at_K and mrr_at_10 of each anchor (row i of `anchors`, float `[n, hidden]`)
    retrieving its own positive (row i of `positives`) among all of them by cosine similarity; a
    tie counts against the anchor (the right one ranks after every candidate scoring as high), a
    non-finite similarity ranks below every finite one, and an anchor whose own positive's
    similarity is non-finite is not found (no recall, no reciprocal rank)."""
    scores = _unit_rows(anchors) @ _unit_rows(positives).T  # [n, n]
    right = np.diag(scores)
    # A NaN compares false with everything: counted as it is, the right one would rank first.
    scores = np.where(np.isfinite(scores), scores, -np.inf)
    rank = np.where(np.isfinite(right), np.sum(scores >= right[:, None], axis=1), np.inf)  # 1 = first
    out = {f"recall_at_{k}": float(np.mean(rank <= k)) for k in RECALL_AT}
    out[f"mrr_at_{MRR_AT}"] = float(np.mean(np.where(rank <= MRR_AT, 1.0 / rank, 0.0)))
    return out


def similarity_figures(first, second, scores):
    """spearman and pearson of the cosine similarities of rows i of `first` and `second` with
    `scores`; both NaN (no figure, which a search ranks last) when a similarity or a score is
    non-finite: ranks would take a NaN for a value of its own and give a number."""
    cosine = np.sum(_unit_rows(first) * _unit_rows(second), axis=1)
    if not (np.all(np.isfinite(cosine)) and np.all(np.isfinite(scores))):
        return {"spearman": float("nan"), "pearson": float("nan")}
    return {"spearman": metrics.spearman(cosine, scores), "pearson": metrics.pearson(cosine, scores)}


class EmbedderTask(Task):
    """A BertSentenceEmbedder (`pooling`, `normalize`) trained with in-batch negatives at
    `similarity_scale`; vocab_file / do_lower_case / max_seq_length configure the in-graph input;
    length_bucket and group_by_length as the other tasks' (`padding_settings`; grouping is not
    offered: a batch's rows are its own candidates, and grouping by length would make them alike).
    max_windows / doc_stride: a text longer than max_seq_length is read as up to max_windows
    windows of it, doc_stride pieces apart (`bert_tf.preprocessing.text_windows`); its vector is
    the mean of its windows' vectors weighted by their real tokens, then normalized where the run
    normalizes (a text of one window keeps its vector). max_windows 1: cut, as
    sentence-transformers does."""

    sum_names = ("loss_sum", "correct", "examples")

    def __init__(self, bert_config, pooling="mean", normalize=False, similarity_scale=SIMILARITY_SCALE,
                 vocab_file=None, do_lower_case=True, max_seq_length=128, length_bucket=None, max_windows=1,
                 doc_stride=None):
        from bert_tf.preprocessing import text_preprocessing

        bert_config.check_seq_length(max_seq_length)
        if not similarity_scale > 0:
            raise ValueError(f"{shown.similarity_scale}={similarity_scale} must be positive")
        self.bert_config = bert_config
        self.pooling, self.normalize, self.similarity_scale = pooling, bool(normalize), float(similarity_scale)
        self.max_seq_length = max_seq_length
        if length_bucket is not None:
            padding_settings(length_bucket)  # a ValueError naming the setting
        self.length_bucket = length_bucket
        doc_stride = default_stride(max_seq_length) if doc_stride is None else doc_stride
        check_windows(max_windows, doc_stride, max_seq_length)
        self.max_windows, self.doc_stride = max_windows, doc_stride
        self.window_pooler = SentencePooling(self.pooling, name="window_pooling", dtype="float32")
        self.pack = None
        if vocab_file is not None:
            tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, max_seq_length, bert_config.vocab_size)
            self.pack = TextPacker(tokenizer, packer, pair=False, windows=(max_windows, doc_stride)
                                   if max_windows > 1 else None)

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)  # the config's dropout: no head of its own
        return BertSentenceEmbedder(encoder, self.pooling, self.normalize)

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        if self.pack is None:
            raise ValueError(f"EmbedderTask needs a {shown.vocab_file} to read text")
        texts = [k for k in (ANCHOR, POSITIVE, NEGATIVE, TEXT) if k in data]

        def to_model(batch):
            packed = [self.pack.traced(batch[k]) for k in texts]  # each [B, S] (windows: [W_k, S])
            x = {name: tf.concat([p[name] for p in packed], axis=0) for name in INPUT_NAMES}  # [len(texts) * B, S]
            if self.max_windows > 1:  # column k's texts follow the k columns before it
                rows = tf.size(batch["weight"])
                x[WINDOW_TEXT] = tf.concat([p[WINDOW_TEXT] + k * rows for k, p in enumerate(packed)], axis=0)
                x[WINDOW_COUNT] = tf.concat([p[WINDOW_COUNT] for p in packed], axis=0)
            y = {"weight": batch["weight"], **carried(batch)}
            if NEGATIVE in batch:  # the negatives' rows are candidates as their anchors' are
                y["negative_weight"] = batch["weight"]
            if _SCORE in batch:
                y[_SCORE] = batch[_SCORE]
            return cut_padding(x, self.length_bucket, INPUT_NAMES), y

        ds = array_dataset(data, mode, batch_size, input_context, seed, skip_batches)
        return ds.map(to_model, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)

    def call_model(self, model, x, training):
        if WINDOW_TEXT not in x:
            return model(x, training=training)
        inputs = {name: x[name] for name in INPUT_NAMES}
        # Each window's vector before any normalization: the text's is their weighted mean.
        vectors = self.window_pooler(model.encoder(inputs, training=training)["sequence_output"], inputs["input_mask"])
        return window_vectors(vectors, inputs["input_mask"], x[WINDOW_TEXT], tf.size(x[WINDOW_COUNT]), self.normalize)

    def window_counts(self, data):
        """`(windows, cut)` of each text of `data` (`features`' dict, every column in turn), int32
        `[n]` each; None without windows."""
        if self.pack is None or self.pack.windows is None:
            return None
        columns = [window_counts(data, self.pack.traced, keys=(k,)) for k in (ANCHOR, POSITIVE, NEGATIVE, TEXT)
                   if k in data]
        return tuple(np.concatenate([c[i] for c in columns]) for i in range(2))

    # -----------------------------------------------------------------------------------------
    # Loss and metrics

    @staticmethod
    def _split(labels, outputs):
        """The batch's vectors as (anchors, positives, negatives or None), each `[B, hidden]`:
        the dataset put B anchors, then B positives, then B negatives where `labels` has their
        weights (`negative_weight`)."""
        rows = tf.shape(labels["weight"])[0]
        negatives = outputs[2 * rows:] if "negative_weight" in labels else None
        return outputs[:rows], outputs[rows:2 * rows], negatives

    def _per_example(self, labels, outputs):
        """(loss, correct) per anchor, float32 `[B]`: in-batch negatives over the real rows."""
        anchors, positives, negatives = self._split(labels, outputs)
        weight = labels["weight"]
        candidates = weight if negatives is None else tf.concat([weight, labels["negative_weight"]], axis=0)
        # One similarity matrix for both: the loss is in_batch_negatives_xent's, from the same scores.
        scores, right = in_batch_scores(anchors, positives, negatives, self.similarity_scale, candidates)
        loss = tf.reduce_logsumexp(scores, axis=-1) - right
        correct = tf.equal(tf.argmax(scores, axis=-1, output_type=tf.int32), tf.range(tf.shape(scores)[0]))
        return loss, tf.cast(correct, tf.float32)

    def distillation_losses(self, inputs, labels, student, teacher, temperature):
        # sentence-transformers' MSE distillation: the squared distance of the vectors, the mean over
        # their dimensions; an anchor's row holds the mean of its texts' (anchor, positive, negative).
        per_text = keras.losses.mean_squared_error(tf.cast(teacher, tf.float32), tf.cast(student, tf.float32))
        return tf.reduce_mean(tf.reshape(per_text, [-1, tf.shape(labels["weight"])[0]]), axis=0)  # [B]

    def teacher_targets(self, outputs, rows):
        # [columns * rows, H] (column k's rows after the k columns before it) -> [rows, columns, H]
        vectors = tf.cast(outputs, tf.float32)
        return {"outputs": tf.transpose(tf.reshape(vectors, [-1, rows, tf.shape(vectors)[-1]]), [1, 0, 2])}

    def teacher_outputs(self, targets, student):
        vectors = tf.transpose(targets["outputs"], [1, 0, 2])  # [columns, rows, H]
        return tf.reshape(vectors, [-1, tf.shape(vectors)[-1]])

    def normalizers(self, labels):
        return {"examples": tf.reduce_sum(labels["weight"])}

    def sums(self, labels, outputs):
        weight = labels["weight"]
        if _SCORE in labels:  # scored pairs are no retrieval: no loss, no accuracy
            zero = tf.zeros([], tf.float32)
            return {"loss_sum": zero, "correct": zero, "examples": tf.reduce_sum(weight)}
        loss, correct = self._per_example(labels, outputs)
        return {
            "loss_sum": tf.reduce_sum(weight * loss),
            "correct": tf.reduce_sum(weight * correct),
            "examples": tf.reduce_sum(weight),
        }

    def loss(self, sums, normalizers):
        return sums["loss_sum"] / normalizers["examples"]

    def train_logs(self, sums):
        n = max(sums["examples"], 1e-12)
        return {"loss": sums["loss_sum"] / n, "accuracy": sums["correct"] / n}

    def predict_outputs(self, outputs):
        return {"embeddings": tf.cast(outputs, tf.float32)}

    def eval_outputs(self, labels, outputs):
        anchors, positives, _ = self._split(labels, outputs)
        out = {"anchor": tf.cast(anchors, tf.float32), "positive": tf.cast(positives, tf.float32),
               "weight": labels["weight"]}
        if _SCORE in labels:
            out[_SCORE] = labels[_SCORE]
        return out

    def eval_results(self, sums, gathered, batch_losses):
        real = gathered["weight"] > 0
        anchors, positives = gathered["anchor"][real], gathered["positive"][real]
        if _SCORE in gathered:
            return similarity_figures(anchors, positives, gathered[_SCORE][real])
        n = max(sums["examples"], 1e-12)
        return {**retrieval_figures(anchors, positives), "eval_loss": sums["loss_sum"] / n,
                "loss": float(np.mean(batch_losses))}
