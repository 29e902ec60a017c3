"""A run that diverges: the training loop's stop when a loss or a weight is NaN or Inf, and a
search's record of its run that did (`bert_tf.training.search`)."""

import json
import math
import os

import tensorflow as tf

from bert_tf.io_utils import atomic_write, read_json_object

__all__ = ["DIVERGED_FILE", "Diverged", "read_divergence"]  # the loop and the search use the rest

# In the folder of a search's run whose training diverged: {"step": N, "message": the loop's error}.
DIVERGED_FILE = "diverged.json"


class Diverged(FloatingPointError):
    """Training stopped at `step`: the loss, or the weights about to be saved, not finite."""

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


def read_divergence(run_dir):
    """`{"step", "message"}` of a run of a search that diverged (`DIVERGED_FILE`), or None."""
    path = os.path.join(run_dir, DIVERGED_FILE)
    return read_json_object(path) if os.path.isfile(path) else None


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
