"""Named-entity recognition (run_ner.py): CoNLL-2003 data, conlleval's figures, fine-tuned or feature-based.

Importing this package loads none of its modules; `__all__` names them."""

__all__ = ["conll", "conlleval", "export", "fine_tuning", "inputs", "run", "task"]
