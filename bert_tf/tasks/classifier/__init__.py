"""Sentence(-pair) classification (run_classifier.py): GLUE, XNLI, multi-label and registered tasks.

Importing this package loads its settings (`Settings`) and none of its other modules; `__all__` names them."""

from bert_tf.tasks.classifier.settings import Settings  # noqa: F401 - the task's settings: `bert_tf.tasks.classifier.Settings`

__all__ = [
    "Settings", "catalog", "export", "fine_tuning", "glue", "inputs", "kind", "metrics", "multilabel", "processors",
    "run", "task", "tfds"
]
