"""The old home of the official SQuAD v1.1/v2.0 evaluation, now `bert_tf.tasks.squad.metrics`.

Its names stay importable from here as deprecated aliases (see `bert_tf._deprecated`).
"""


def __getattr__(name):
    from bert_tf._deprecated import moved

    return moved(__name__, name)
