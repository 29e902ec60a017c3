"""The old home of GLUE's metrics, now `bert_tf.tasks.classifier.metrics`.

Its names stay importable from here as deprecated aliases (see `bert_tf._deprecated`).
"""


def __getattr__(name):
    from bert_tf._deprecated import moved

    return moved(__name__, name)
