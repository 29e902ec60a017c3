"""Deprecated: moved to `bert_tf.runs.record`, the run core below the tasks, so that training,
checkpoints and exports read it without importing the tasks. Every name is still read here, with a
DeprecationWarning saying where it went."""

import warnings

from bert_tf.runs import record as _moved


def __getattr__(name):
    value = getattr(_moved, name)  # an AttributeError for a name that was never here
    warnings.warn(f"bert_tf.tasks.record.{name} moved to bert_tf.runs.record.{name}", DeprecationWarning,
                  stacklevel=2)
    return value
