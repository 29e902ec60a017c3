"""The old home of the classification tasks' readers and registry, now
`bert_tf.tasks.classifier.processors` and `.catalog` (the file helpers: `bert_tf.data.text_files`).

Task modules written for earlier releases import from here (the README showed it), so its names
stay importable as deprecated aliases (see `bert_tf._deprecated`).
"""


def __getattr__(name):
    from bert_tf._deprecated import moved

    return moved(__name__, name)
