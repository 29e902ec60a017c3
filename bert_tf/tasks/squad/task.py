"""Extractive question answering (paper §4.2-4.3; the original `run_squad.py`) as a task of the
one loop: a BertSpanLabeler trained on answer start and end positions.

The loss is the original's: for the start and for the end, the cross-entropy of the gold
position under a softmax over every position of the sequence (padding included, as the
original), averaged over the batch; the two averaged. `data` for `dataset` is a
`bert_tf.tasks.squad.inputs.SquadRecords`.

With `length_bucket`, batches are cut to their longest feature: the softmax then runs over the
batch's positions (the padding that fixed shapes add past them is gone), and predicted logits are
padded back to max_seq_length with the lowest float32, so that post-processing never ranks a cut
position among the n best (the original ranks its padding positions there and then discards them
as outside the passage).
"""

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.data.batching import pad_positions
from bert_tf.models import BertEncoder, BertSpanLabeler
from bert_tf.tasks.squad.inputs import record_lengths, squad_dataset
from bert_tf.training.distillation import soft_target_kl
from bert_tf.training.settings import padding_settings
from bert_tf.training.task import Task


class SquadTask(Task):
    """Start/end logits over [CLS] question [SEP] passage [SEP] of `max_seq_length`; batches cut
    to a multiple of `length_bucket` (None: fixed shapes), training batches grouped by length
    with `group_by_length` (`bert_tf.training.settings.padding_settings`)."""

    sum_names = ("loss_sum", "start_correct", "end_correct", "examples")

    # Its loss's softmax runs over every position, the padding's too (the original's): a teacher's
    # cached outputs are computed on uncut batches (`bert_tf.training.distillation.teacher_targets`).
    loss_reads_padding = True

    def __init__(self, bert_config, max_seq_length=384, length_bucket=None, group_by_length=False):
        bert_config.check_seq_length(max_seq_length)
        if length_bucket is not None:
            padding_settings(length_bucket)  # a ValueError naming the setting
        self.bert_config = bert_config
        self.max_seq_length = max_seq_length
        self.length_bucket, self.group_by_length = length_bucket, group_by_length

    def build_model(self):
        return BertSpanLabeler(BertEncoder.from_bert_config(self.bert_config))

    def num_examples(self, data):
        # `data` is a SquadRecords: its features (a transfer's after them) are the rows prediction returns.
        return data.total

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        lengths = record_lengths(data) if mode == "train" and self.group_by_length else None
        return squad_dataset(data, mode, batch_size, input_context, seed, skip_batches, self.length_bucket, lengths)

    def _per_example(self, labels, outputs):
        """(loss, start correct, end correct), float32 `[batch]`."""
        losses, correct = [], []
        for name in ("start", "end"):
            logits = tf.cast(outputs[f"{name}_logits"], tf.float32)
            positions = labels[f"{name}_positions"]
            losses.append(tf.nn.sparse_softmax_cross_entropy_with_logits(positions, logits))
            correct.append(tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), positions), tf.float32))
        return (losses[0] + losses[1]) / 2.0, correct[0], correct[1]

    def distillation_losses(self, inputs, labels, student, teacher, temperature):
        # The start and the end distributions over the sequence's positions, as the loss averages them.
        return sum(soft_target_kl(student[name], teacher[name], temperature) for name in ("start_logits",
                                                                                          "end_logits")) / 2.0

    def with_columns(self, data, columns):
        return dataclasses.replace(data, carried={**(data.carried or {}), **columns})

    def teacher_targets(self, outputs, rows):
        return self.predict_outputs(outputs)  # each [rows, max_seq_length]: the positions past a batch's, -inf

    def teacher_outputs(self, targets, student):
        return {name: targets[name][:, : tf.shape(student[name])[1]] for name in ("start_logits", "end_logits")}

    def normalizers(self, labels):
        return {"examples": tf.reduce_sum(labels["weight"])}

    def sums(self, labels, outputs):
        loss, start, end = self._per_example(labels, outputs)
        weight = labels["weight"]
        return {
            "loss_sum": tf.reduce_sum(weight * loss),
            "start_correct": tf.reduce_sum(weight * start),
            "end_correct": tf.reduce_sum(weight * end),
            "examples": tf.reduce_sum(weight),
        }

    def loss(self, sums, normalizers):
        return sums["loss_sum"] / normalizers["examples"]

    def train_logs(self, sums):
        n = max(sums["examples"], 1e-12)
        return {
            "loss": sums["loss_sum"] / n,
            "start_accuracy": sums["start_correct"] / n,
            "end_accuracy": sums["end_correct"] / n,
        }

    def predict_outputs(self, outputs):
        return {
            name: pad_positions(tf.cast(outputs[name], tf.float32), self.max_seq_length, tf.float32.min)
            for name in ("start_logits", "end_logits")
        }

    def eval_results(self, sums, gathered, batch_losses):
        # Token-level figures on features with gold positions; the answers' exact match and F1
        # come from post-processing (`bert_tf.tasks.squad.predictions`, `bert_tf.tasks.squad.metrics`).
        logs = self.train_logs(sums)
        return {
            "eval_loss": logs["loss"],
            "eval_start_accuracy": logs["start_accuracy"],
            "eval_end_accuracy": logs["end_accuracy"],
            "loss": float(np.mean(batch_losses)),
        }
