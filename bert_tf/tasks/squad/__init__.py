"""Extractive question answering (run_squad.py): SQuAD v1.1 / v2.0 features, post-processing, evaluation.

Importing this package loads its settings (`Settings`) and none of its other modules; `__all__` names them."""

from bert_tf.tasks.squad.settings import Settings  # noqa: F401 - the task's settings: `bert_tf.tasks.squad.Settings`

__all__ = [
    "Settings", "export", "feature_cache", "feature_writer", "features", "fine_tuning", "inputs", "json_reader",
    "kind", "metrics", "predictions", "run", "task", "tfds"
]
