"""Extractive question answering (run_squad.py): SQuAD v1.1 / v2.0 features, post-processing, evaluation.

Importing this package loads none of its modules; `__all__` names them."""

__all__ = [
    "export", "feature_cache", "feature_writer", "features", "fine_tuning", "inputs", "json_reader", "metrics",
    "predictions", "run", "task", "tfds",
]
