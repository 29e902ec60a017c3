"""What a task gives the one training loop (`bert_tf.training.trainer.Trainer`).

A task is pre-training, or a fine-tuning task: it builds its model, turns its data into tf.data
batches, and states its loss and metrics as per-batch sums, so that the loop can add them up
over micro-batches, replicas and steps and normalise them over the global batch (one device,
several replicas and gradient accumulation then give the same updates).
"""

import abc

import tensorflow as tf


class Task(abc.ABC):
    """The pieces of a task. `data` below is whatever the task reads (files, examples)."""

    # Names of the per-batch sums `sums` returns (fixed, so the loop can accumulate them).
    sum_names: tuple = ()

    @abc.abstractmethod
    def build_model(self):
        """The Keras model (built under the strategy's scope)."""

    def restore(self, model, path):
        """Loads initial weights from `path` (init_checkpoint); returns the checkpoint loader's
        report (`bert_tf.checkpoints.LoadReport`: what was unused, what was not found) or None
        when the source says nothing of that (a .keras file, one of our checkpoints)."""
        from bert_tf import checkpoints

        return checkpoints.restore(model, path)

    def num_examples(self, data):
        """How many examples `data` holds (prediction drops the rows past them, which pad the
        last global batch). The default reads a dict of arrays, one row per example."""
        return len(next(iter(data.values())))

    @abc.abstractmethod
    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        """A tf.data.Dataset of `(x, y)` batches of `batch_size` (per replica) for `mode`:
        "train" (shuffled with `seed`, repeated forever, the first `skip_batches` skipped
        cheaply), "eval" or "predict" (every example once; see `ordered_batches`)."""

    def call_model(self, model, x, training):
        """The model's outputs on a batch's inputs `x`, as the loss, metrics and predictions read
        them. The default calls the model; a task whose batches hold more than the model's inputs
        (windows of long texts, which it pools into one row per text) says how."""
        return model(x, training=training)

    def distillation_losses(self, inputs, labels, student, teacher, temperature):
        """Each row's loss against a teacher's outputs (`bert_tf.training.distillation`): float32
        `[rows]`, the rows of `labels["weight"]`, from the student's and the teacher's outputs on
        the batch's inputs `inputs` (as `call_model` returns them) at softmax `temperature`. A task
        that offers distillation says how; the default refuses."""
        raise NotImplementedError(f"{type(self).__name__} offers no distillation")

    def with_columns(self, data, columns):
        """`data` with per-row `columns` (numpy `[rows, ...]`, in the order of its rows) that its
        training batches carry into their labels (`bert_tf.data.batching.CARRIED`). The default
        adds them to a dict of arrays."""
        return {**data, **columns}

    def teacher_targets(self, outputs, rows):
        """A teacher's outputs on a prediction batch of `rows` rows (as `call_model` returns them) as the columns
        its cache keeps (`bert_tf.training.distillation`): a dict of float32 tensors `[rows, ...]`
        of fixed shape past the rows, one row per row of the task's data. The default keeps a
        tensor as `outputs` and a dict as it is; a task whose outputs are per token (cut to each
        batch's length) or not one per row (several texts per row) says how."""
        if isinstance(outputs, dict):
            return {name: _float32(value) for name, value in outputs.items()}
        return {"outputs": _float32(outputs)}

    def teacher_outputs(self, targets, student):
        """`teacher_targets`' columns of a training batch -> the teacher's outputs as `call_model`
        returns them, shaped as the student's outputs `student` on that batch (the inverse of
        `teacher_targets`)."""
        return dict(targets) if isinstance(student, dict) else targets["outputs"]

    def normalizers(self, labels):
        """Per-batch values summed over the whole global batch (every replica and micro-batch)
        before the loss is computed: what the loss divides by."""
        return {}

    @abc.abstractmethod
    def sums(self, labels, outputs):
        """float32 scalars summed over the batch, named as `sum_names`: the loss's numerators
        and the metrics' counts."""

    @abc.abstractmethod
    def loss(self, sums, normalizers):
        """This batch's share of the global batch's loss (plain arithmetic, so it also runs
        on Python floats)."""

    @abc.abstractmethod
    def train_logs(self, sums):
        """Metrics from sums added up over steps and replicas; must include "loss"."""

    def eval_outputs(self, labels, outputs):
        """Per-example tensors `[batch, ...]` that evaluation needs whole (gathered in input
        order across replicas), e.g. probabilities and labels for F1. Batches cut to their
        length differ in length: per-token tensors are padded back to a fixed one
        (`bert_tf.data.batching.pad_positions`), as are `predict_outputs`'."""
        return {}

    @abc.abstractmethod
    def eval_results(self, sums, gathered, batch_losses):
        """The results dict from the summed `sums`, the gathered `eval_outputs` (numpy, input
        order) and the list of each batch's loss (the original's `loss` is their mean)."""

    def predict_outputs(self, outputs):
        """Per-example tensors to return from prediction."""
        return outputs


def _float32(value):
    return tf.cast(value, tf.float32)
