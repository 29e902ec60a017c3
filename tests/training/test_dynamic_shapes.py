"""The loop over batches cut to their length: one trace of the training step for every
length, and no more traces of evaluation and prediction than there are lengths."""

import numpy as np
import pytest
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


@pytest.mark.slow
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
    # Four lengths, one trace: the eval step's signature is the data's spec.
    assert task.traces["sums"] - 1 == 1
    task.traces["predict"] = 0  # evaluation's outputs call it too
    trainer.predict(data)
    assert task.traces["predict"] == 1


@pytest.mark.slow
def test_skipping_padding_trains_and_predicts_as_the_plain_loop(tmp_path, monkeypatch):
    """settings.skip_padding: prediction and training traced skipping the padding (the blocks
    say so when called); prediction of the same weights as without it on the real tokens; two
    such trainings alike, the loss finite and near the plain one's."""
    from bert_tf.layers import TransformerBlock

    seen = []  # (training, skip_padding) of every block call the loop traces
    call = TransformerBlock.call

    def spied(self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None):
        seen.append((bool(training), self.skip_padding))  # the signature Keras' build check reads
        return call(self, inputs, attention_mask, training, return_probs, query_positions)

    monkeypatch.setattr(TransformerBlock, "call", spied)
    data = _windows([3, 9, 5, 14, 2, 7, 11, 4])
    rng = np.random.default_rng(0)
    data["input_word_ids"] = data["input_mask"] * rng.integers(5, tiny_config().vocab_size, (8, SEQ)).astype(np.int32)
    runs = {}
    for skip in (False, True, True):
        task = NerTask(tiny_config(), LABELS, max_seq_length=SEQ, length_bucket=1)
        settings = TrainingSettings(str(tmp_path / f"{skip}{len(runs)}"), train_batch_size=4, eval_batch_size=4,
                                    predict_batch_size=4, num_train_steps=6, num_warmup_steps=0,
                                    save_checkpoints_steps=6, seed=1, skip_padding=skip)
        trainer = Trainer(task, settings, tf.distribute.get_strategy())
        seen.clear()
        before = trainer.predict(data)
        assert (False, skip) in seen and (False, not skip) not in seen  # prediction traced so
        real = data["input_mask"].astype(bool)
        if skip:  # the same initial weights as the plain run's: the same outputs on the real tokens
            for name, value in runs[False][0][0].items():
                assert value.shape[:2] == real.shape, name  # every output is per token
                np.testing.assert_allclose(before[name][real], value[real], atol=1e-5, err_msg=name)
        seen.clear()
        trainer.train(data)
        assert (True, skip) in seen and (True, not skip) not in seen
        runs.setdefault(skip, []).append((before, trainer.evaluate(data), [w.numpy() for w in trainer.model.weights]))
    plain_eval, (first, second) = runs[False][0][1], runs[True]
    assert np.isfinite(first[1]["eval_loss"]) and abs(first[1]["eval_loss"] - plain_eval["eval_loss"]) < 0.5
    for a, b in zip(first[2], second[2], strict=True):  # two runs skipping the padding: identical
        np.testing.assert_array_equal(a, b)
