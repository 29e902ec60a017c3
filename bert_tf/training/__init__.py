"""Training: the one loop that runs pre-training and every fine-tuning task (`trainer.Trainer`, the
`task.Task` contract it runs), the original's optimizers and learning-rate schedule
(`optimizers`, keras.ops only: what importing this package loads and registers with Keras), the
run's settings and their checks (`settings`, `speed`), its life in its output folder (`run`),
the fine-tuning search (`search`) and tf.distribute strategies (`distribution`). The loop,
strategies and pre-training task use TensorFlow (tf.data, tf.function, tf.distribute)."""

from bert_tf.training.optimizers import LAMB, AdamWeightDecay, WarmupLinearDecay, create_optimizer

__all__ = ["LAMB", "AdamWeightDecay", "WarmupLinearDecay", "create_optimizer"]
