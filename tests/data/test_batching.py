"""Batches of in-memory arrays: every row once in order for eval, on any number of replicas;
seeded, resumable training order."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.batching import array_dataset, pad_rows


def _features(n):
    # A 2-D text column and a 2-D number column: padding keeps their shapes.
    return {
        "id": np.arange(n, dtype=np.int32),
        "pair": np.array([[f"a{i}", f"b{i}"] for i in range(n)], dtype=object),
        "values": np.ones((n, 3), np.float32),
    }


def _rows(ds):
    return [(b["id"].numpy().tolist(), b["weight"].numpy().tolist()) for b in ds]


def test_padding_rows_are_empty_and_weigh_nothing():
    padded = pad_rows(_features(5), 4)
    assert padded["id"].tolist() == [0, 1, 2, 3, 4, 0, 0, 0]
    assert padded["pair"][5:].tolist() == [["", ""]] * 3 and not padded["values"][5:].any()
    assert padded["weight"].tolist() == [1.0] * 5 + [0.0] * 3
    assert pad_rows(_features(8), 4)["weight"].tolist() == [1.0] * 8


def test_eval_sees_every_row_once_in_order_on_any_number_of_replicas():
    features = _features(23)
    batches = _rows(array_dataset(features, "eval", 4))
    assert [i for ids, _ in batches for i in ids][:23] == list(range(23))
    assert [w for _, ws in batches for w in ws] == [1.0] * 23 + [0.0]
    # 4 replicas of batch 3 fed by 2 pipelines; taken in replica order, the rows come in order.
    per_pipeline = [
        _rows(array_dataset(features, "predict", 3, tf.distribute.InputContext(2, pid, 4))) for pid in range(2)
    ]
    merged = [per_pipeline[pid][2 * step + local] for step in range(2) for pid in range(2) for local in range(2)]
    assert [i for ids, _ in merged for i in ids][:23] == list(range(23))
    assert [w for _, ws in merged for w in ws] == [1.0] * 23 + [0.0]


def test_training_order_is_seeded_reshuffled_each_epoch_and_skip_continues_it():
    features = _features(12)
    first = [ids for ids, _ in _rows(array_dataset(features, "train", 4, seed=3).take(9))]
    assert first == [ids for ids, _ in _rows(array_dataset(features, "train", 4, seed=3).take(9))]
    for epoch in range(3):
        assert sorted(i for batch in first[3 * epoch : 3 * epoch + 3] for i in batch) == list(range(12))
    assert first[:3] != first[3:6]
    skipped = array_dataset(features, "train", 4, seed=3, skip_batches=5).take(4)
    assert [ids for ids, _ in _rows(skipped)] == first[5:9]


def test_nothing_to_batch_and_unknown_modes():
    with pytest.raises(ValueError, match="no examples"):
        array_dataset({"id": np.zeros(0, np.int32)}, "eval", 2)
    with pytest.raises(ValueError, match="mode 'test' is not train, eval or predict"):
        array_dataset(_features(2), "test", 2)
