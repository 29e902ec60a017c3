"""The fine-tuning tasks, one folder each (`classifier`, `squad`, `ner`, `swag`): readers, input
building, the Task of the one training loop, outputs, metrics, export, and the steps the one
fine-tuning driver takes them through (`contract`: what a task supplies; read it to add one). What each kind is made
of (`bert_tf.runs.registry`) and what a run leaves beside its checkpoints (`bert_tf.runs.record`)
live below them, in the run core (`registry` and `record` here are their deprecated old names).
Importing this package loads none of the tasks; `bert_tf.runs.registry` imports each built-in
folder's `kind` module (its entry: model, head, record fields, ...) and, with it, its settings."""

# The built-in task folders, in the order the registry lists their kinds.
BUILT_IN = ("classifier", "squad", "ner", "swag", "embedder")

__all__ = ["classifier", "contract", "ner", "squad", "swag"]


def __getattr__(name):
    """Names this package held before, as deprecated aliases resolved when used (PEP 562)."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
