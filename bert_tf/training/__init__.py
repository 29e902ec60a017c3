"""Training: the original's optimizer and learning-rate schedule (keras.ops only)."""

from bert_tf.training.optimizers import LAMB, AdamWeightDecay, WarmupLinearDecay, create_optimizer

__all__ = ["LAMB", "AdamWeightDecay", "WarmupLinearDecay", "create_optimizer"]
