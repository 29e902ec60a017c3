"""The one loop's contract, on a toy Task (a linear regression): what it asks of a task and what
it promises back (restore status, predictions trimmed to the examples, resumable training)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.batching import array_dataset
from bert_tf.training.settings import check_weights_may_change
from bert_tf.training.task import Task
from bert_tf.training.trainer import INITIALISED, RANDOM, RESUMED, Trainer, TrainingSettings


class LinearTask(Task):
    """y = x . w: mean squared error, summed over the batch and divided by the global count."""

    sum_names = ("squared_error", "examples")

    def build_model(self):
        inputs = {"x": keras.Input((3,), name="x")}
        return keras.Model(inputs, keras.layers.Dense(1, use_bias=False)(inputs["x"])[:, 0])

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        ds = array_dataset(data, mode, batch_size, input_context, seed, skip_batches)
        return ds.map(lambda b: ({"x": b["x"]}, {"y": b["y"], "weight": b["weight"]}))

    def normalizers(self, labels):
        return {"examples": tf.reduce_sum(labels["weight"])}

    def sums(self, labels, outputs):
        error = labels["weight"] * tf.square(outputs - labels["y"])
        return {"squared_error": tf.reduce_sum(error), "examples": tf.reduce_sum(labels["weight"])}

    def loss(self, sums, normalizers):
        return sums["squared_error"] / normalizers["examples"]

    def train_logs(self, sums):
        return {"loss": sums["squared_error"] / max(sums["examples"], 1e-12)}

    def eval_results(self, sums, gathered, batch_losses):
        return {"eval_loss": sums["squared_error"] / sums["examples"], "loss": float(np.mean(batch_losses))}

    def predict_outputs(self, outputs):
        return {"y": outputs}


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return {"x": x, "y": x @ np.array([1.0, -2.0, 0.5], np.float32)}


def _trainer(tmp_path, **overrides):
    values = dict(
        output_dir=str(tmp_path), train_batch_size=8, eval_batch_size=4, predict_batch_size=4, learning_rate=0.1,
        num_train_steps=60, num_warmup_steps=0, save_checkpoints_steps=30, seed=3,
    )
    values.update(overrides)
    return Trainer(LinearTask(), TrainingSettings(**values), tf.distribute.get_strategy())


def test_trains_evaluates_and_predicts_every_example_once_in_order(tmp_path):
    trainer = _trainer(tmp_path)
    data = _data(64)
    before = trainer.evaluate(data)["eval_loss"]
    status, step = trainer.train(data)
    assert status.start == RANDOM and step == 60
    results = trainer.evaluate(data)
    assert results["global_step"] == 60 and results["eval_loss"] < before / 10
    test = _data(10, seed=1)  # 10 rows: the last batch of 4 is padded with 2 rows
    predicted = trainer.predict(test)["y"]
    assert predicted.shape == (10,)
    kernel = trainer.model.layers[-1].kernel.numpy()[:, 0]  # the rows in input order, nothing else
    np.testing.assert_allclose(predicted, test["x"] @ kernel, rtol=1e-5, atol=1e-5)


def test_evaluation_and_prediction_of_a_model_whose_outputs_overflow_stop_before_any_figure(tmp_path):
    """A finite weight can still overflow the outputs: every figure or file computed from them would
    look like a result (an arg max of NaN is label 0), so both stop with the loop's Diverged."""
    from bert_tf.training.divergence import Diverged

    trainer = _trainer(tmp_path)
    trainer.model.layers[-1].kernel.assign(np.array([[3e38], [3e38], [0.0]], np.float32))
    data = {"x": np.array([[2.0, 2.0, 0.0]] * 4 + [[0.0, 0.0, 1.0]] * 4, np.float32), "y": np.zeros(8, np.float32)}
    with np.errstate(over="ignore"):
        assert not np.all(np.isfinite(data["x"] @ trainer.model.layers[-1].kernel.numpy()))  # float32 overflows
    with pytest.raises(Diverged, match=r"^evaluation with the model at step 0: NaN or Inf in the model's outputs for "
                                       r"4 of 8 example\(s\): the weights it starts from overflow \(check that "
                                       r"checkpoint\); nothing was written as a result$"):
        trainer.evaluate(data)
    with pytest.raises(Diverged, match=r"^prediction with the model at step 0: NaN or Inf in the task's outputs y and "
                                       r"the model's outputs for 4 of 8 example\(s\): "):
        trainer.predict(data)
    # A task whose outputs are whole numbers (NER's tag ids: the arg max of NaN is 0) is stopped all the same.
    trainer.task.predict_outputs = lambda outputs: {"label": tf.cast(outputs > 0, tf.int32)}
    with pytest.raises(Diverged, match=r"^prediction with the model at step 0: NaN or Inf in the model's outputs for "
                                       r"4 of 8 example\(s\): "):
        trainer.predict(data)
    trainer.task.predict_outputs = LinearTask.predict_outputs.__get__(trainer.task)
    finite = {k: v[4:] for k, v in data.items()}  # the rows that do not overflow: a result as before
    np.testing.assert_allclose(trainer.predict(finite)["y"], np.zeros(4), atol=0)


def test_refuses_to_train_where_tensorflow_keeps_its_products_first_weights(tmp_path, monkeypatch):
    """TensorFlow reads its switch as a bool: "1" or "true" in any case on, "0" or "false" off, and
    aborts on anything else (a serving process's setting: README). Training is refused before
    anything is written. Nothing here runs a product while the switch is set: TensorFlow reads it
    once, at its first oneDNN product, and this process's later tests train."""
    switch = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"  # TensorFlow's name, spelt here
    for value in ("0", "false", "False"):
        check_weights_may_change({switch: value})
    check_weights_may_change({})
    trainer = _trainer(tmp_path / "run")
    for value in ("1", "true", "TRUE"):
        with pytest.raises(ValueError, match=f"^{switch}={value} is set in this environment: .* training would "
                           "not see its own updates. Unset it to train"):
            check_weights_may_change({switch: value})
        monkeypatch.setenv(switch, value)
        with pytest.raises(ValueError, match=f"^{switch}={value} is set"):
            trainer.train(_data(64))
    # Values TensorFlow cannot read as a bool abort the process at its first product: refused too.
    for value in ("yes", "", " 1"):
        with pytest.raises(ValueError, match=f"^{switch}={value!r} is set .* reads it as 1, true, 0 or false"):
            check_weights_may_change({switch: value})
        monkeypatch.setenv(switch, value)
        with pytest.raises(ValueError, match="aborts at its first product on anything else. Unset it to train$"):
            trainer.train(_data(64))
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_restore_says_what_it_did(tmp_path):
    first = _trainer(tmp_path / "a", num_train_steps=30)
    first.train(_data(64))
    resumed = _trainer(tmp_path / "a", num_train_steps=60)
    status = resumed.restore()
    assert (status.start, status.step, status.path.endswith("ckpt-30")) == (RESUMED, 30, True)
    assert "resumed from" in str(status)
    fresh = _trainer(tmp_path / "b")
    status = fresh.restore(str(tmp_path / "a" / "ckpt-30"))
    assert (status.start, status.step) == (INITIALISED, 0)
    np.testing.assert_array_equal(fresh.model.get_weights()[0], first.model.get_weights()[0])
    assert _trainer(tmp_path / "c").restore().start == RANDOM


def test_a_latest_checkpoint_holding_nan_is_refused_naming_it_and_the_weight(tmp_path):
    first = _trainer(tmp_path, num_train_steps=30)
    first.train(_data(64))
    kernel = first.model.layers[-1].kernel
    kernel.assign(np.full(kernel.shape, np.nan, np.float32))  # what a damaged file would hold
    first.manager().save(checkpoint_number=31)
    with pytest.raises(ValueError, match=rf"^{tmp_path}/ckpt-31: weight \S+/kernel holds NaN or infinity "
                                         r"\(3 of 3 values\)"):
        _trainer(tmp_path).restore()


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path):
    data = _data(64)
    whole = _trainer(tmp_path / "whole")
    whole.train(data)

    def stop_after_the_first_checkpoint(step, logs):
        if step > 30:
            raise KeyboardInterrupt

    try:
        _trainer(tmp_path / "parts").train(data, on_log=stop_after_the_first_checkpoint)
    except KeyboardInterrupt:
        pass
    status, step = _trainer(tmp_path / "parts").train(data)
    assert status.start == RESUMED and step == 60
    again = _trainer(tmp_path / "parts")
    again.restore()
    np.testing.assert_array_equal(again.model.get_weights()[0], whole.model.get_weights()[0])
