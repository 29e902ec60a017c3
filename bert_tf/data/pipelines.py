"""The old home of the pre-training input pipeline, kept because the README showed it; new code
imports `bert_tf.data.pretraining.pipeline`."""

from bert_tf.data.pretraining.pipeline import DynamicMasking, pretraining_dataset

__all__ = ["DynamicMasking", "pretraining_dataset"]
