"""The old home of conlleval's entity-level figures, now `bert_tf.tasks.ner.conlleval`.

Its names stay importable from here as deprecated aliases (see `bert_tf._deprecated`).
"""


def __getattr__(name):
    from bert_tf._deprecated import moved

    return moved(__name__, name)
