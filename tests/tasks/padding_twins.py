"""What the tests of dynamic padding share: a task's model evaluated and predicting with fixed
shapes (length_bucket None) and then, on the same weights (the same model), with its batches cut;
the cut lengths the rule gives."""

import numpy as np

BUCKET = 4
BATCH = 2


def trainer_of(task, tmp_path):
    """A Trainer of `task` (fixed shapes: length_bucket None) with eval and predict batches of BATCH."""
    import tensorflow as tf

    from bert_tf.training.trainer import Trainer, TrainingSettings

    assert task.length_bucket is None
    settings = TrainingSettings(str(tmp_path / "run"), eval_batch_size=BATCH, predict_batch_size=BATCH, seed=1)
    return Trainer(task, settings, tf.distribute.get_strategy())


def cut_lengths(lengths, seq, bucket=BUCKET):
    """Each eval batch's length as the rule states it, from each example's real length (`lengths`,
    in input order; the rows that pad the last batch have none): the batch's longest rounded up
    to a multiple of `bucket`, at least `bucket`, at most `seq`."""
    lengths = np.concatenate([lengths, np.zeros(-len(lengths) % BATCH, int)])
    longest = lengths.reshape(-1, BATCH).max(1)
    return np.minimum(np.maximum(-(-longest // bucket) * bucket, bucket), seq).tolist()


def assert_same_results(fixed, cut):
    """Eval results equal within 1e-5."""
    assert set(cut) == set(fixed)
    for key, value in fixed.items():
        np.testing.assert_allclose(cut[key], value, atol=1e-5, rtol=1e-5, err_msg=key)


def run_both(trainer, data, evaluate=True):
    """`(fixed, cut)`: the eval results (None without `evaluate`) and predictions of `trainer` over
    `data` with fixed shapes, then with its batches cut, those batches' lengths (input_word_ids'
    last dimension) with the latter."""

    def work():
        return trainer.evaluate(data) if evaluate else None, trainer.predict(data)

    fixed = work()
    trainer.task.length_bucket = BUCKET
    try:
        lengths = [x["input_word_ids"].shape[-1] for x, _ in trainer.task.dataset(data, "eval", BATCH)]
        return fixed, (lengths, *work())
    finally:
        trainer.task.length_bucket = None
