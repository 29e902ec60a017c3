"""Named-entity recognition (run_ner.py): CoNLL-2003 data, conlleval's figures, fine-tuned or feature-based.

Importing this package loads its settings (`Settings`) and none of its other modules; `__all__` names them."""

from bert_tf.tasks.ner.settings import Settings  # noqa: F401 - the task's settings: `bert_tf.tasks.ner.Settings`

__all__ = [
    "Settings", "conll", "conlleval", "export", "fine_tuning", "inputs", "kind", "run", "task"
]
