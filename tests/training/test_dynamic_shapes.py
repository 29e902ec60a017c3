"""The loop over batches cut to their length (issue 21): one trace of the training step for every
length, and no more traces of evaluation and prediction than there are lengths."""

import numpy as np
import tensorflow as tf

from bert_tf.tasks.ner.task import NerTask
from bert_tf.training.trainer import Trainer, TrainingSettings
from tests.tiny import tiny_config

SEQ = 16
LABELS = ["O", "B-PER"]


class CountingTask(NerTask):
    """Counts the Python calls of `sums` and `predict_outputs`: each is one trace."""

    traces = {"sums": 0, "predict": 0}

    def sums(self, labels, outputs):
        self.traces["sums"] += 1
        return super().sums(labels, outputs)

    def predict_outputs(self, outputs):
        self.traces["predict"] += 1
        return super().predict_outputs(outputs)


def _windows(lengths):
    """NER arrays of windows with `lengths` real tokens (ids 5.., the first token tagged)."""
    n = len(lengths)
    mask = (np.arange(SEQ)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    weights = np.zeros((n, SEQ), np.float32)
    weights[:, 1] = 1.0
    return {
        "input_word_ids": mask * 5, "input_mask": mask, "input_type_ids": np.zeros_like(mask),
        "label_ids": np.zeros_like(mask), "label_weights": weights, "sentence": np.arange(n, dtype=np.int32),
    }


def test_each_length_is_traced_once(tmp_path):
    data = _windows([3, 3, 7, 7, 11, 11, 2, 14])  # eval batches of 2: lengths 4, 8, 12, 16
    task = CountingTask(tiny_config(), LABELS, max_seq_length=SEQ, length_bucket=4)
    seen = {int(x["input_word_ids"].shape[1]) for x, _ in task.dataset(data, "train", 2, seed=1).take(8)}
    assert len(seen) > 1  # training batches of several lengths
    settings = TrainingSettings(str(tmp_path), train_batch_size=2, eval_batch_size=2, predict_batch_size=2,
                                num_train_steps=8, num_warmup_steps=0, save_checkpoints_steps=8, seed=1)
    trainer = Trainer(task, settings, tf.distribute.get_strategy())
    trainer.train(data)
    assert task.traces["sums"] == 1  # the step's spec leaves the length unknown
    trainer.evaluate(data)
    # Four lengths: a second one relaxes the trace to any length.
    assert task.traces["sums"] - 1 == 2
    task.traces["predict"] = 0  # evaluation's outputs call it too
    trainer.predict(data)
    assert task.traces["predict"] == 2
