"""Multiple choice (run_swag.py): SWAG's CSV files, four endings per context.

Importing this package loads its settings (`Settings`) and none of its other modules; `__all__` names them."""

from bert_tf.tasks.swag.settings import Settings  # noqa: F401 - the task's settings: `bert_tf.tasks.swag.Settings`

__all__ = [
    "Settings", "export", "fine_tuning", "kind", "reader", "run", "task"
]
