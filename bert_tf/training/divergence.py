"""A run that diverges: the training loop's stop when a loss or a weight is NaN or Inf, and a
search's record of its run that did (`bert_tf.training.search`)."""

import json
import math
import os

import numpy as np
import tensorflow as tf

from bert_tf.io_utils import atomic_write
from bert_tf.runs.diverged import DIVERGED_FILE, diverged_warning, read_divergence  # noqa: F401 - kept importable from here

__all__ = ["DIVERGED_FILE", "Diverged", "diverged_warning", "read_divergence"]  # the loop and the search use the rest


class Diverged(FloatingPointError):
    """A run's loss, weights or outputs became NaN or Inf: the run stopped without writing them.

    Training raises it when its loss or metrics, or the weights about to be saved, are not finite
    (no checkpoint is saved). Evaluation and prediction raise it when the task's outputs, the
    model's outputs or (in evaluation) the batches' losses hold a NaN or an Inf (no figure or
    file is written from them). It is a `FloatingPointError`, which `record_divergence` looks for
    in a failed run's chain.

    Args:
        message: The error's text (the loop's says what became NaN or Inf, at which step, and
            what to do).
        step: The model's global step when it was found; kept as the `step` attribute.
    """

    def __init__(self, message, step):
        super().__init__(message)
        self.step = step


def stop_unless_finite(figures, step, manager, weights=()):
    """Raises Diverged, nothing saved, when one of the task's training `figures` (its loss and
    metrics) or of `weights` (those about to be saved: the loss is computed before the step's
    update, so the last update shows only in them) is NaN or Inf."""
    if not all(math.isfinite(v) for v in figures.values()):
        what = f"the loss became {figures['loss']}"
    elif not all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in weights):
        what = f"the weights became NaN or Inf (the step's loss was {figures['loss']:.6g})"
    else:
        return
    last = manager.latest_checkpoint
    where = (f"The last checkpoint, {last}, holds finite weights, but resumed with these settings the run may "
             "diverge again: to train with a lower learning rate, start afresh in another output folder"
             if last else "No checkpoint was saved before it")
    raise Diverged(f"{what} at step {step}; stopped without saving. {where}", step)


# The per-example key under which the loop gathers `finite_rows` beside a task's outputs.
FINITE = "__finite__"


def finite_rows(outputs):
    """int32 tensor of shape `[batch]`: 1 where every float value of the model's `outputs` (a tensor
    or a dict of them, batch first) is finite in the row, else 0 (an integer: collective ops, which
    gather it across workers, take no bool)."""
    tensors = list(outputs.values()) if isinstance(outputs, dict) else [outputs]
    rows = None
    for tensor in tensors:
        if tensor.dtype.is_floating:
            finite = tf.reduce_all(tf.reshape(tf.math.is_finite(tensor), [tf.shape(tensor)[0], -1]), axis=1)
            rows = finite if rows is None else tf.logical_and(rows, finite)
    return tf.cast(rows, tf.int32) if rows is not None else tf.ones([tf.shape(tensors[0])[0]], tf.int32)


def stop_unless_outputs_finite(outputs, what, step, losses=(), finite=None):
    """Raises Diverged when the task's `outputs` (name -> numpy array, one row per example), the
    model's own (`finite`: `finite_rows` gathered, False where a row is not), or `losses` hold a
    NaN or an Inf: figures or files computed from them would look like results (a NaN similarity
    ranks first, the arg max of NaN logits is label 0). `what` names the work ("evaluation",
    "prediction") in the message; `step` is the model's."""
    bad = [name for name, values in outputs.items()
           if np.issubdtype(np.asarray(values).dtype, np.floating) and not np.all(np.isfinite(values))]
    where = [f"the task's outputs {', '.join(bad)}"] if bad else []
    if finite is not None and not np.all(finite):
        where.append(f"the model's outputs for {int(np.sum(~np.asarray(finite, bool)))} of {len(finite)} example(s)")
    if not where and all(math.isfinite(v) for v in losses):
        return
    where = " and ".join(where) or "its loss"
    why = ("its weights overflow (train with a lower learning rate)" if step else
           "the weights it starts from overflow (check that checkpoint)")
    raise Diverged(f"{what} with the model at step {step}: NaN or Inf in {where}: {why}; nothing was written as a "
                   "result", step)






def record_divergence(run_dir, error):
    """For a run's failure `error`: when a FloatingPointError (training's loss or weights not
    finite) is in its chain (a script's one-line exit has the library error it reports as its
    context), DIVERGED_FILE written in `run_dir` and returned; otherwise `error` raised again."""
    cause, seen = error, set()
    while cause is not None and not isinstance(cause, FloatingPointError) and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    if not isinstance(cause, FloatingPointError):
        raise error
    diverged = {"step": int(getattr(cause, "step", 0)), "message": str(cause)}
    os.makedirs(run_dir, exist_ok=True)
    with atomic_write(os.path.join(run_dir, DIVERGED_FILE)) as f:
        json.dump(diverged, f, indent=2)
    return diverged
