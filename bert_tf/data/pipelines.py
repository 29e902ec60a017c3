"""The old home of the pre-training input pipeline, now `bert_tf.data.pretraining.pipeline`
(`ordered_batches`: `bert_tf.data.batching`).

The README showed it, so its names stay importable as deprecated aliases (see
`bert_tf._deprecated`).
"""


def __getattr__(name):
    from bert_tf._deprecated import moved

    return moved(__name__, name)
