"""The pre-training run behind run_pretraining.py: the one loop (`trainer.Trainer`) on the
pre-training task (`bert_tf.tasks.pretraining`), with its settings under the original names."""

import dataclasses

from bert_tf.tasks.pretraining import PretrainingTask, metrics_from_sums, pretraining_sums
from bert_tf.training.trainer import CLIP_NORM, Trainer, TrainingSettings

__all__ = ["CLIP_NORM", "Pretraining", "PretrainingSettings", "metrics_from_sums", "pretraining_sums"]


@dataclasses.dataclass(frozen=True)
class PretrainingSettings(TrainingSettings):
    """run_pretraining.py's flags: the loop's settings plus the data's shape."""

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    max_eval_steps: int | None = 100


class Pretraining(Trainer):
    """The loop on `PretrainingTask(bert_config)`; `evaluate` also writes eval_results.txt."""

    def __init__(self, bert_config, settings: PretrainingSettings, strategy):
        task = PretrainingTask(bert_config, settings.max_seq_length, settings.max_predictions_per_seq)
        super().__init__(task, settings, strategy)

    def evaluate(self, eval_files, summary_dir=None):
        """The original's eval over at most max_eval_steps batches, files read in order. Writes
        eval_results.txt (`key = value`, sorted, as the original) and returns the dict."""
        results = super().evaluate(eval_files)
        self.write_eval_results(results, summary_dir)
        return results
