"""Sentence(-pair) classification (run_classifier.py): GLUE, XNLI, multi-label and registered tasks.

Importing this package loads none of its modules; `__all__` names them."""

__all__ = [
    "catalog", "export", "fine_tuning", "glue", "inputs", "metrics", "multilabel", "processors", "run", "task", "tfds",
]
