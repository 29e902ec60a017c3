"""Knowledge distillation as a task of the one loop (TensorFlow): a student learns its task's labels
and a fine-tuned teacher's outputs on the same batches (Hinton et al., 2015; the second step of
"Well-Read Students Learn Better", Turc et al., 2019).

`DistilledTask` wraps the task the student fine-tunes on. In a training step it runs the teacher
(frozen, without dropout) on the batch the student reads, and adds the task's soft-target loss
(`Task.distillation_losses`: the temperature-softened distribution over labels, choices, tags or
span positions; the vectors' mean squared error for sentence embeddings) to the labels' loss:

    loss = alpha * labels' loss * labelled rows / rows + (1 - alpha) * the mean soft-target loss over the rows

each over the global batch. Rows without a label (transfer text: their `weight` is 0) count in the
second term alone. The labels' loss is the task's (its mean over the labelled rows, or their
tokens), scaled by the labelled rows' share of the batch: each labelled row weighs alpha against
every row's 1 - alpha, however few labelled rows a batch of transfer text holds. (The task's mean
alone gave a batch's one labelled row the weight of a whole batch: measured on a 200-label task
with 3,000 transfer sentences, the student's soft-target loss then stayed at its start and its dev
accuracy at chance.) Without transfer rows the share is 1.
Evaluation and prediction are the task's own: the student's outputs, its labels' loss.

The teacher's outputs come from one of two places. Computed in the step, the teacher runs on
every training batch. Cached (`TeacherCache`), they are computed once before training, in one
prediction pass over the training rows (`teacher_targets`), and kept in the run's folder; each
row's outputs then travel with the row through the shuffle and the batching (the task's
`teacher_targets` columns, `bert_tf.data.batching.CARRIED`), and the step reads them from the
batch's labels. The cache costs one epoch of the teacher's forward pass, the step one per epoch:
docs/distillation.md gives the measured choice. A resumed run reads the cache again and computes
nothing; a cache of other training rows, another teacher or another run record is computed anew.
The teacher is not in the student's checkpoints.
"""

import copy
import dataclasses
import hashlib
import json
import os
import time
import typing
import zipfile

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data.batching import CARRIED
from bert_tf.io_utils import atomic_write
from bert_tf.training.task import Task
from bert_tf.training.trainer import per_example_outputs

__all__ = ["TeacherCache", "copy_from_teacher", "soft_target_kl", "teacher_targets"]

# The cache's file in the run's folder.
TEACHER_OUTPUTS = "teacher_outputs.npz"
_FINGERPRINT = "__fingerprint__"

_DISTILL_SUM, _DISTILL_ROWS, _LABELLED_ROWS = "distill_sum", "distill_rows", "labelled_rows"


class Distilled(typing.NamedTuple):
    """A training step's outputs: the student's, the teacher's (no gradient) and the batch's inputs."""

    student: typing.Any
    teacher: typing.Any
    inputs: dict


def soft_target_kl(student_logits, teacher_logits, temperature):
    """Hinton's soft-target loss: `T^2 KL(softmax(teacher / T) || softmax(student / T))` over the
    last axis (Keras' `kl_divergence`, as `keras.distillation.LogitsDistillation` computes it, per
    row instead of its batch mean: the loop sums rows over replicas and micro-batches).

    Args:
        student_logits: float tensor `[..., classes]`.
        teacher_logits: float tensor of the same shape.
        temperature: The softmax temperature T.

    Returns:
        float32 `[...]`: the loss of each row.
    """
    t = tf.nn.softmax(tf.cast(teacher_logits, tf.float32) / temperature, axis=-1)
    s = tf.nn.softmax(tf.cast(student_logits, tf.float32) / temperature, axis=-1)
    return keras.losses.kl_divergence(t, s) * (temperature**2)


def _floor(value):
    # A normalizer of 0 (a batch of transfer rows only) has a sum of 0 over it: the term is 0, not NaN.
    return tf.maximum(value, 1e-12) if tf.is_tensor(value) else max(value, 1e-12)


def copy_from_teacher(student, teacher, layers):
    """Gives `student` the teacher's weights: its embeddings, its transformer `layers` in order (the
    student's layer i is the teacher's layers[i], as DistilBERT starts its student from every other
    layer of BERT), its pooler and its head.

    Args:
        student: A task model whose encoder has `len(layers)` transformer layers.
        teacher: The same kind of model, with the same widths.
        layers: The teacher's layer indices, one per student layer.

    Raises:
        ValueError: The models differ in anything but the number of layers.
    """
    s_layers, t_layers = student.encoder.transformer_layers, teacher.encoder.transformer_layers
    if len(s_layers) != len(layers):
        raise ValueError(f"the student has {len(s_layers)} layers, not the {len(layers)} named")
    pairs = list(zip(s_layers, [t_layers[i] for i in layers], strict=True))
    in_layers = {id(v) for layer in (*s_layers, *t_layers) for v in layer.weights}
    rest = [[v for v in model.weights if id(v) not in in_layers] for model in (student, teacher)]
    variables = [(s, t) for a, b in pairs for s, t in zip(a.weights, b.weights, strict=True)]
    if len(rest[0]) != len(rest[1]):
        raise ValueError(f"the student holds {len(rest[0])} weights beside its layers, the teacher {len(rest[1])}")
    variables += list(zip(*rest, strict=True))
    for s, t in variables:
        if tuple(s.shape) != tuple(t.shape):
            raise ValueError(f"the student's {s.path} is {tuple(s.shape)}, the teacher's {t.path} {tuple(t.shape)}")
    for s, t in variables:
        s.assign(t)


@dataclasses.dataclass(frozen=True)
class TeacherCache:
    """Where and how a run caches its teacher's outputs.

    Attributes:
        folder: The run's folder; the cache is its `teacher_outputs.npz`.
        batch_size: The batch of each replica in the prediction pass that computes it.
        identity: What else the outputs depend on (the run's record: lengths, windows, pooling),
            as text; a cache made under another is computed anew.
    """

    folder: str
    batch_size: int
    identity: str = ""

    @property
    def path(self):
        return os.path.join(self.folder, TEACHER_OUTPUTS)


def teacher_targets(task, teacher, data, batch_size, strategy=None):
    """The teacher's outputs on every row of `data`, as the columns `task.teacher_targets` gives.

    The rows run as prediction runs them: each replica of `strategy` a batch of `batch_size`, the
    outputs gathered in input order. A task whose loss reads the padding positions' outputs
    (`loss_reads_padding`: SQuAD's softmax over every position) runs uncut batches, so that a
    training batch of any length finds the teacher's own outputs at every position it has (a
    padding position's depends on its row alone); the others run batches cut to their length.

    Args:
        task: The student's Task (its prediction batches, `call_model` and `teacher_targets`).
        teacher: The teacher model (built under `strategy`'s scope).
        data: The training data, as `task.dataset` reads it.
        batch_size: The prediction batch of each replica.
        strategy: The tf.distribute strategy; None: the default one.

    Returns:
        A dict of numpy arrays `[rows, ...]`, one row per example of `data`, in order.
    """
    strategy = strategy or tf.distribute.get_strategy()
    if getattr(task, "loss_reads_padding", False) and getattr(task, "length_bucket", None) is not None:
        task = copy.copy(task)
        task.length_bucket = None
    batches = strategy.distribute_datasets_from_function(
        lambda context: task.dataset(data, "predict", batch_size, input_context=context))

    def replica(batch):
        x, y = batch
        return task.teacher_targets(task.call_model(teacher, x, False), tf.shape(y["weight"])[0])

    return per_example_outputs(strategy, batches, replica, task.num_examples(data))


# What a cache's digests cover, as its reason for not being read names them.
_DIGESTS = {"format": "an earlier release's columns", "rows": "other training rows",
            "teacher": "another teacher's weights", "record": "another run record"}
# Bumped when the columns a task caches change: an earlier file is computed again, not misread.
CACHE_FORMAT = 1


def fingerprint(data, teacher, identity):
    """Digests of what a teacher's cached outputs depend on: `rows`, the training rows (a dict of
    arrays, or records in the files `data.files`); `teacher`, the teacher's weights; `record`,
    `identity`; and the cache's `format` (`CACHE_FORMAT`). Returns a dict of strings."""
    rows = hashlib.sha256()
    if isinstance(data, dict):
        for name in sorted(data):
            value = np.asarray(data[name])
            rows.update(name.encode() + str(value.shape).encode())
            rows.update(repr(value.tolist()).encode() if value.dtype == object else value.tobytes())
    else:
        rows.update(repr(data).encode())
        for path in data.files:
            with tf.io.gfile.GFile(path, "rb") as f:
                while chunk := f.read(1 << 24):
                    rows.update(chunk)
    weights = hashlib.sha256()
    for weight in teacher.weights:
        weights.update(keras.ops.convert_to_numpy(weight).tobytes())
    return {"format": str(CACHE_FORMAT), "rows": rows.hexdigest(), "teacher": weights.hexdigest(),
            "record": hashlib.sha256(identity.encode()).hexdigest()}


def _read_cache(path, key):
    """`(columns, None, [])` of the cache at `path` when it was made for `key` (`fingerprint`); else
    `(None, why not, differ)`: none there, made for something else (`differ`: which of `_DIGESTS`),
    or unreadable (a damaged file is computed again, as a missing one)."""
    if not os.path.exists(path):
        return None, "none yet there", []
    try:
        with np.load(path, allow_pickle=False) as stored:
            made = json.loads(str(stored[_FINGERPRINT])) if _FINGERPRINT in stored.files else {}
            differ = [part for part in _DIGESTS if made.get(part) != key[part]]
            if differ:
                return None, f"the one there was made for {_made_for(differ)}", differ
            return {k: stored[k] for k in stored.files if k != _FINGERPRINT}, None, []
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        return None, f"the one there is unreadable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})", []


def _made_for(differ):
    """What a cache whose digests `differ` (keys of `_DIGESTS`) was made for, in words."""
    return ", ".join(_DIGESTS[part] for part in differ)


def _write_cache(path, columns, key):
    # Complete or absent, as the run's other files (`atomic_write`: a temporary name, then renamed).
    with atomic_write(path, "wb") as f:
        np.savez(f, **columns, **{_FINGERPRINT: np.array(json.dumps(key))})


class DistilledTask(Task):
    """`task` trained on its labels and on `teacher`'s outputs (module docstring).

    Args:
        task: The student's Task (its data, model, loss and figures; its `distillation_losses`).
        teacher: A callable returning the teacher model, called once under the strategy's scope
            when the student is built.
        temperature: The softmax temperature of both models' logits.
        alpha: The labels' loss weight; the teacher's targets take 1 - alpha.
        student_layers: None, or the teacher's layers the student starts from: restoring from
            `teacher_path` then copies them (`copy_from_teacher`).
        teacher_path: The teacher's folder (the `init_checkpoint` that means "from the teacher").
        cache: None (the teacher runs in the step), or the `TeacherCache` of its outputs: training
            then reads data prepared by `with_teacher_outputs`.
    """

    def __init__(self, task, teacher, temperature, alpha, student_layers=None, teacher_path=None, cache=None):
        if not temperature > 0:
            raise ValueError(f"the distillation temperature must be positive, got {temperature}")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"the labels' loss weight alpha must be between 0 and 1, got {alpha}")
        self.task, self._teacher, self.teacher = task, teacher, None
        self.temperature, self.alpha = float(temperature), float(alpha)
        self.student_layers, self.teacher_path, self.cache = student_layers, teacher_path, cache
        self.sum_names = (*task.sum_names, _DISTILL_SUM, _DISTILL_ROWS)

    def __getattr__(self, name):  # the student task's own methods (window_counts, encode, ...)
        if name == "task":
            raise AttributeError(name)
        return getattr(self.task, name)

    def build_model(self):
        student = self.task.build_model()
        self.teacher = self._teacher()
        self.teacher.trainable = False
        return student

    def restore(self, model, path):
        if self.student_layers is not None and path == self.teacher_path:
            copy_from_teacher(model, self.teacher, self.student_layers)
            return None
        return self.task.restore(model, path)

    def num_examples(self, data):
        return self.task.num_examples(data)

    def with_teacher_outputs(self, data, write=True, strategy=None):
        """`data` with the teacher's outputs on each of its rows (the task's `with_columns`), read
        from the cache's file, or computed (`teacher_targets`) and written there. Without a cache,
        `data` itself. Call it once the model is built (`build_model`: the teacher with it);
        `write`: whether this process writes the file (the chief), or keeps the outputs in memory;
        `strategy`: the tf.distribute strategy the pass runs under (None: the default one).

        Raises:
            ValueError: The teacher is not built yet.
        """
        if self.cache is None:
            return data
        if self.teacher is None:
            raise ValueError("the teacher is built with the student (build_model) before its outputs are cached")
        key = fingerprint(data, self.teacher, self.cache.identity)
        columns, why, differ = _read_cache(self.cache.path, key)
        if columns is not None:
            logging.info("The teacher's outputs: read from %s", self.cache.path)
        else:
            if "teacher" in differ:  # a resumed run's earlier steps learnt from other outputs
                logging.warning("The teacher's outputs in %s were made for %s: computed again, from the teacher's "
                                "weights as they are now", self.cache.path, _made_for(differ))
            start = time.perf_counter()
            columns = teacher_targets(self.task, self.teacher, data, self.cache.batch_size, strategy)
            if write:
                _write_cache(self.cache.path, columns, key)
            logging.info("The teacher's outputs: computed on %d rows in %.1f s and cached in %s (%s)",
                         self.num_examples(data), time.perf_counter() - start, self.cache.path, why)
        return self.task.with_columns(data, {CARRIED + name: value for name, value in columns.items()})

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        return self.task.dataset(data, mode, batch_size, input_context, seed, skip_batches)

    def call_model(self, model, x, training):
        student = self.task.call_model(model, x, training)
        if not training:
            return student
        if self.cache is not None:  # the batch's labels hold the teacher's outputs
            return Distilled(student, None, x)
        teacher = tf.nest.map_structure(tf.stop_gradient, self.task.call_model(self.teacher, x, False))
        return Distilled(student, teacher, x)

    def normalizers(self, labels):
        weight = labels["weight"]  # [rows], or a weight per token ([rows, positions]: NER)
        rows = tf.cast(tf.shape(weight)[0], tf.float32)  # every row of a training batch is real
        per_row = tf.reshape(tf.cast(weight, tf.float32), [tf.shape(weight)[0], -1])
        labelled = tf.reduce_sum(tf.cast(tf.reduce_max(per_row, axis=-1) > 0, tf.float32))
        return {**self.task.normalizers(labels), _DISTILL_ROWS: rows, _LABELLED_ROWS: labelled}

    def sums(self, labels, outputs):
        if not isinstance(outputs, Distilled):  # evaluation: the student alone
            zero = tf.zeros([], tf.float32)
            return {**self.task.sums(labels, outputs), _DISTILL_SUM: zero, _DISTILL_ROWS: zero}
        teacher = outputs.teacher
        if teacher is None:
            cached = {name[len(CARRIED):]: value for name, value in labels.items() if name.startswith(CARRIED)}
            if not cached:
                raise ValueError("a training batch without the teacher's cached outputs: train on the data "
                                 "that with_teacher_outputs returns")
            teacher = self.task.teacher_outputs(cached, outputs.student)
        losses = self.task.distillation_losses(outputs.inputs, labels, outputs.student, teacher,
                                               self.temperature)  # [rows]
        rows = tf.cast(tf.shape(losses)[0], tf.float32)
        return {**self.task.sums(labels, outputs.student), _DISTILL_SUM: tf.reduce_sum(losses), _DISTILL_ROWS: rows}

    def loss(self, sums, normalizers):
        labels = self.task.loss(sums, {name: _floor(value) for name, value in normalizers.items()})
        if not tf.is_tensor(sums[_DISTILL_SUM]) and not sums[_DISTILL_ROWS]:
            return labels  # an evaluation batch: no teacher ran
        rows = _floor(normalizers[_DISTILL_ROWS])
        share = normalizers[_LABELLED_ROWS] / rows
        return self.alpha * labels * share + (1.0 - self.alpha) * sums[_DISTILL_SUM] / rows

    def train_logs(self, sums):
        return {**self.task.train_logs(sums), "distill_loss": sums[_DISTILL_SUM] / max(sums[_DISTILL_ROWS], 1e-12)}

    def eval_outputs(self, labels, outputs):
        return self.task.eval_outputs(labels, outputs)

    def eval_results(self, sums, gathered, batch_losses):
        return self.task.eval_results(sums, gathered, batch_losses)

    def predict_outputs(self, outputs):
        return self.task.predict_outputs(outputs)
