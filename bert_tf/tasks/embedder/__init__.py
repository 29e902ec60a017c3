"""Sentence embeddings (run_sentence_embedding.py): one vector per text, fine-tuned contrastively
on (anchor, positive[, negative]) pairs, evaluated by retrieval or by STS-style correlation.

Importing this package loads none of its modules; `__all__` names them."""

__all__ = ["export", "fine_tuning", "reader", "run", "task"]
