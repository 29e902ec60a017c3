"""Sentence embeddings (run_sentence_embedding.py): one vector per text, fine-tuned contrastively
on (anchor, positive[, negative]) pairs, evaluated by retrieval or by STS-style correlation.

Importing this package loads its settings (`Settings`) and none of its other modules; `__all__` names them."""

from bert_tf.tasks.embedder.settings import Settings  # noqa: F401 - the task's settings: `bert_tf.tasks.embedder.Settings`

__all__ = [
    "Settings", "export", "fine_tuning", "kind", "reader", "run", "task"
]
