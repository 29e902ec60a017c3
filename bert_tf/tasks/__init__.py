"""Tasks of the one training loop: pre-training and the fine-tuning tasks (TensorFlow)."""

from bert_tf.tasks.base import Task

__all__ = ["Task"]
