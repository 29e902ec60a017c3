"""Sentence and sentence-pair classification as a task of the one loop (paper §4.1; the
original `run_classifier.py`), plus regression (STS-B) and multi-label classification.

- "single": softmax over the labels, the original's mean cross-entropy; eval_accuracy and
  eval_loss as the original, plus the task's GLUE metric (F1, Matthews correlation).
- "regression": one output, mean squared error; Pearson and Spearman correlations.
- "multi": one sigmoid per label, binary cross-entropy (mean over labels, then examples);
  micro and macro F1 at threshold 0.5, and the exact-match accuracy.

`data` for `dataset` is `encode_examples`' dict; rows of weight 0 (padding) count nowhere. Batches
are cut to their longest sequence (`length_bucket`); the outputs read the [CLS] position alone,
which attention over fewer padding positions leaves as it was.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.errors import shown
from bert_tf.models import BertClassifier, BertEncoder
from bert_tf.models.bert_encoder import INPUT_NAMES
from bert_tf.preprocessing.text_windows import (
    WINDOW_COUNT,
    WINDOW_POOLING,
    WINDOW_TEXT,
    check_windows,
    default_stride,
    pool_windows,
)
from bert_tf.tasks.classifier import metrics
from bert_tf.tasks.classifier.inputs import LABEL_KINDS, TextPacker, classifier_dataset, packed_lengths, window_counts
from bert_tf.training.distillation import soft_target_kl
from bert_tf.training.settings import padding_settings
from bert_tf.training.task import Task

# Metrics reported besides accuracy and loss, by name (`eval_<name>`).
METRIC_FUNCTIONS = {"f1": metrics.f1_score, "mcc": metrics.matthews_corrcoef}
# What GLUE reports beyond accuracy, by submission name (STS-B's correlations come with
# regression; MNLI's mismatched accuracy with its extra dev set).
METRIC_FOR_GLUE_TASK = {"CoLA": ("mcc",), "MRPC": ("f1",), "QQP": ("f1",)}
MULTI_LABEL_THRESHOLD = 0.5


class ClassifierTask(Task):
    """A BertClassifier over `labels` (names; empty for regression) of kind `label_kind`.

    vocab_file / do_lower_case / max_seq_length / pair configure the in-graph input
    (`pair`: whether text_b is packed). extra_metrics: names from METRIC_FUNCTIONS reported as
    `eval_<name>` (e.g. ("f1",) for MRPC). length_bucket: every batch is cut to its longest
    sequence rounded up to a multiple of it (None: max_seq_length, the original's fixed shapes);
    group_by_length: training batches of examples of similar length (`padding_settings`).
    max_windows / doc_stride / window_pooling: a text longer than max_seq_length is read as up
    to max_windows windows of it, doc_stride pieces apart (`bert_tf.preprocessing.text_windows`);
    its prediction is the "max" or "mean" of its windows' logits, and training learns from the
    text's label through that pooled prediction. max_windows 1: the original's truncation.
    """

    sum_names = ("loss_sum", "correct", "examples")

    def __init__(self, bert_config, labels, label_kind="single", vocab_file=None, do_lower_case=True,
                 max_seq_length=128, pair=True, extra_metrics=(), dropout_rate=0.1, length_bucket=None,
                 group_by_length=False, max_windows=1, doc_stride=None, window_pooling="max"):
        from bert_tf.preprocessing import text_preprocessing

        if label_kind not in LABEL_KINDS:
            raise ValueError(f"label_kind {label_kind!r} is not one of {', '.join(LABEL_KINDS)}")
        fewest = 1 if label_kind == "multi" else 2
        if label_kind != "regression" and len(labels) < fewest:
            raise ValueError(f"a {label_kind}-label task needs at least {fewest} labels, got {list(labels)}")
        bert_config.check_seq_length(max_seq_length)
        unknown = [m for m in extra_metrics if m not in METRIC_FUNCTIONS]
        if unknown:
            raise ValueError(f"unknown metric(s) {unknown}; known: {sorted(METRIC_FUNCTIONS)}")
        self.bert_config = bert_config
        self.labels = list(labels)
        self.label_kind = label_kind
        self.num_outputs = 1 if label_kind == "regression" else len(self.labels)
        self.extra_metrics = tuple(extra_metrics)
        self.dropout_rate = dropout_rate
        self.max_seq_length = max_seq_length
        if length_bucket is not None:
            padding_settings(length_bucket)  # a ValueError naming the setting
        self.length_bucket, self.group_by_length = length_bucket, group_by_length
        doc_stride = default_stride(max_seq_length) if doc_stride is None else doc_stride
        check_windows(max_windows, doc_stride, max_seq_length)
        if window_pooling not in WINDOW_POOLING:
            raise ValueError(f"{shown.window_pooling}={window_pooling!r} is not one of {', '.join(WINDOW_POOLING)}")
        self.max_windows, self.doc_stride, self.window_pooling = max_windows, doc_stride, window_pooling
        self.pack = None
        if vocab_file is not None:
            tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, max_seq_length, bert_config.vocab_size)
            windows = (max_windows, doc_stride) if max_windows > 1 else None
            self.pack = TextPacker(tokenizer, packer, pair, windows)

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)
        return BertClassifier(encoder, num_classes=self.num_outputs, dropout_rate=self.dropout_rate)

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        if self.pack is None:
            raise ValueError(f"ClassifierTask needs a {shown.vocab_file} to read text")
        pack = self.pack.traced
        lengths = packed_lengths(data, pack) if mode == "train" and self.group_by_length else None
        return classifier_dataset(
            data, pack, batch_size, mode, input_context, seed, skip_batches, self.length_bucket, lengths
        )

    def call_model(self, model, x, training):
        if WINDOW_TEXT not in x:
            return model(x, training=training)
        logits = model({name: x[name] for name in INPUT_NAMES}, training=training)  # [windows, outputs]
        return pool_windows(tf.cast(logits, tf.float32), x[WINDOW_TEXT], tf.size(x[WINDOW_COUNT]),
                            self.window_pooling)  # [texts, outputs]

    def window_counts(self, data):
        """`(windows, cut)` of each text of `data` (`encode_examples`' dict), int32 `[n]` each:
        its windows, and 1 where it goes past its last one; None without windows."""
        if self.pack is None or self.pack.windows is None:
            return None
        return window_counts(data, self.pack.traced)

    # -----------------------------------------------------------------------------------------
    # Loss and metrics

    def _per_example(self, labels, logits):
        """(loss, correct) per example, float32 `[batch]`."""
        logits = tf.cast(logits, tf.float32)
        if self.label_kind == "single":
            ids = tf.cast(labels["label"], tf.int32)
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(ids, logits)
            correct = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), ids)
        elif self.label_kind == "regression":
            loss = tf.square(logits[:, 0] - labels["label"])
            correct = tf.zeros_like(loss, tf.bool)
        else:
            target = tf.cast(labels["label"], tf.float32)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(target, logits), axis=-1)
            correct = tf.reduce_all(tf.equal(tf.cast(logits > 0.0, tf.float32), target), axis=-1)
        return loss, tf.cast(correct, tf.float32)

    def distillation_losses(self, inputs, labels, student, teacher, temperature):
        # Regression: the squared distance of the scores (no distribution to soften); multi-label:
        # each label's sigmoid softened as a two-way softmax, the labels' mean.
        student, teacher = tf.cast(student, tf.float32), tf.cast(teacher, tf.float32)
        if self.label_kind == "regression":
            return keras.losses.mean_squared_error(teacher, student)
        if self.label_kind == "multi":
            soft = tf.sigmoid(teacher / temperature)
            return keras.losses.binary_crossentropy(soft, student / temperature, from_logits=True) * temperature**2
        return soft_target_kl(student, teacher, temperature)

    def normalizers(self, labels):
        return {"examples": tf.reduce_sum(labels["weight"])}

    def sums(self, labels, outputs):
        loss, correct = self._per_example(labels, outputs)
        weight = labels["weight"]
        return {
            "loss_sum": tf.reduce_sum(weight * loss),
            "correct": tf.reduce_sum(weight * correct),
            "examples": tf.reduce_sum(weight),
        }

    def loss(self, sums, normalizers):
        # The original's mean over the batch; with weights, over its real examples.
        return sums["loss_sum"] / normalizers["examples"]

    def train_logs(self, sums):
        n = max(sums["examples"], 1e-12)
        logs = {"loss": sums["loss_sum"] / n}
        if self.label_kind != "regression":
            logs["accuracy"] = sums["correct"] / n
        return logs

    def predict_outputs(self, outputs):
        logits = tf.cast(outputs, tf.float32)
        if self.label_kind == "single":
            return {"probabilities": tf.nn.softmax(logits, axis=-1)}
        if self.label_kind == "multi":
            return {"probabilities": tf.sigmoid(logits)}
        return {"predictions": logits[:, 0]}

    def eval_outputs(self, labels, outputs):
        return {**self.predict_outputs(outputs), "label": labels["label"], "weight": labels["weight"]}

    def eval_results(self, sums, gathered, batch_losses):
        real = gathered["weight"] > 0
        labels = gathered["label"][real]
        n = max(sums["examples"], 1e-12)
        results = {"eval_loss": sums["loss_sum"] / n, "loss": float(np.mean(batch_losses))}
        if self.label_kind == "single":
            predictions = gathered["probabilities"][real].argmax(-1)
            results["eval_accuracy"] = sums["correct"] / n
            for name in self.extra_metrics:
                results[f"eval_{name}"] = METRIC_FUNCTIONS[name](labels, predictions)
        elif self.label_kind == "regression":
            predictions = gathered["predictions"][real]
            results["eval_pearson"] = metrics.pearson(predictions, labels)
            results["eval_spearman"] = metrics.spearman(predictions, labels)
        else:
            predicted = gathered["probabilities"][real] > MULTI_LABEL_THRESHOLD
            results["eval_accuracy"] = sums["correct"] / n
            results["eval_micro_f1"], results["eval_macro_f1"] = metrics.multilabel_f1(labels, predicted)
        return results


# ---------------------------------------------------------------------------------------------
# Output files


def _cell(value):
    # The original writes str() of numpy float32 values: the shortest repr that reads back.
    return str(np.float32(value))


def write_test_results(path, predictions, count):
    """The original's test_results.tsv: one line per example (the first `count` rows of the
    predictions; the rest is padding), class probabilities joined by tabs, no header; the
    predicted score for regression. Written atomically."""
    from bert_tf.io_utils import atomic_write

    values = predictions.get("probabilities", predictions.get("predictions"))[:count]
    with atomic_write(path) as f:
        for row in values:
            f.write("\t".join(_cell(v) for v in np.atleast_1d(row)) + "\n")


def predicted_labels(predictions, labels, label_kind, count):
    """The prediction of each of the first `count` examples as a submission states it: the
    label name (argmax), the score (regression) or the comma-joined names above the threshold
    (multi-label)."""
    if label_kind == "regression":
        return [_cell(v) for v in predictions["predictions"][:count]]
    probabilities = predictions["probabilities"][:count]
    if label_kind == "multi":
        return [",".join(labels[i] for i in np.flatnonzero(row > MULTI_LABEL_THRESHOLD)) for row in probabilities]
    return [labels[i] for i in probabilities.argmax(-1)]


def write_submission(path, examples, predictions, labels, label_kind):
    """A GLUE-style submission file: a header `index<TAB>prediction`, then one line per
    example in input order (its `index`, else its position). Written atomically."""
    from bert_tf.io_utils import atomic_write

    rows = predicted_labels(predictions, labels, label_kind, len(examples))
    with atomic_write(path) as f:
        f.write("index\tprediction\n")
        for position, (example, prediction) in enumerate(zip(examples, rows, strict=True)):
            index = getattr(example, "index", None)
            f.write(f"{position if index is None else index}\t{prediction}\n")
