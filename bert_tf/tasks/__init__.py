"""The fine-tuning tasks, one folder each (`classifier`, `squad`, `ner`, `swag`): readers, input
building, the Task of the one training loop, outputs, metrics and export. `registry` says what
each kind is made of; `record` is what a run leaves beside its checkpoints. Importing this
package loads none of the tasks."""

__all__ = ["classifier", "ner", "squad", "swag"]


def __getattr__(name):
    """Names this package held before, as deprecated aliases resolved when used (PEP 562)."""
    from bert_tf.tasks._deprecated import moved

    return moved(__name__, name)
