"""Multiple choice (run_swag.py): SWAG's CSV files, four endings per context.

Importing this package loads none of its modules; `__all__` names them."""

__all__ = ["export", "fine_tuning", "reader", "run", "task"]
