"""Extractive question answering (paper §4.2-4.3; the original `run_squad.py`) as a task of the
one loop: a BertSpanLabeler trained on answer start and end positions.

The loss is the original's: for the start and for the end, the cross-entropy of the gold
position under a softmax over every position of the sequence (padding included, as the
original), averaged over the batch; the two averaged. `data` for `dataset` is a
`bert_tf.tasks.squad.inputs.SquadRecords`.
"""

import numpy as np
import tensorflow as tf

from bert_tf.models import BertEncoder, BertSpanLabeler
from bert_tf.tasks.squad.inputs import squad_dataset
from bert_tf.training.task import Task


class SquadTask(Task):
    """Start/end logits over [CLS] question [SEP] passage [SEP] of `max_seq_length`."""

    sum_names = ("loss_sum", "start_correct", "end_correct", "examples")

    def __init__(self, bert_config, max_seq_length=384):
        bert_config.check_seq_length(max_seq_length)
        self.bert_config = bert_config
        self.max_seq_length = max_seq_length

    def build_model(self):
        return BertSpanLabeler(BertEncoder.from_bert_config(self.bert_config))

    def num_examples(self, data):
        # `data` is a SquadRecords: its features are the rows prediction returns.
        return data.count

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        return squad_dataset(data, mode, batch_size, input_context, seed, skip_batches)

    def _per_example(self, labels, outputs):
        """(loss, start correct, end correct), float32 `[batch]`."""
        losses, correct = [], []
        for name in ("start", "end"):
            logits = tf.cast(outputs[f"{name}_logits"], tf.float32)
            positions = labels[f"{name}_positions"]
            losses.append(tf.nn.sparse_softmax_cross_entropy_with_logits(positions, logits))
            correct.append(tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), positions), tf.float32))
        return (losses[0] + losses[1]) / 2.0, correct[0], correct[1]

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
        return {name: tf.cast(outputs[name], tf.float32) for name in ("start_logits", "end_logits")}

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
