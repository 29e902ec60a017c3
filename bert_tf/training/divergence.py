"""A run that diverges: the training loop's stop when a loss or a weight is NaN or Inf."""

import math

import tensorflow as tf

__all__ = ["Diverged"]  # the loop uses the rest


class Diverged(FloatingPointError):
    """Training stopped at `step`: the loss, or the weights about to be saved, not finite."""

    def __init__(self, message, step):
        super().__init__(message)
        self.step = step


def stop_unless_finite(logs, step, manager, weights=()):
    """Raises Diverged, nothing saved, when a figure of `logs` or one of `weights` (those about
    to be saved: the loss is computed before the step's update, so the last update shows only
    in them) is NaN or Inf."""
    if not all(math.isfinite(v) for v in logs.values()):
        what = f"the loss became {logs['loss']}"
    elif not all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in weights):
        what = f"the weights became NaN or Inf (the step's loss was {logs['loss']:.6g})"
    else:
        return
    last = manager.latest_checkpoint or "none: none was saved before it"
    raise Diverged(f"{what} at step {step}; stopped without saving. The last good checkpoint is {last}", step)
