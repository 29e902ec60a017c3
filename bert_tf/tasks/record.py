"""Deprecated: moved to `bert_tf.runs.record`, the run core below the tasks, so that training,
checkpoints and exports read it without importing the tasks. Its names are still read here,
as deprecated aliases (see `bert_tf/_deprecated.py`)."""


def __getattr__(name):
    from bert_tf._deprecated import moved

    return moved(__name__, name)
