"""Batches of in-memory arrays: every row once in order for eval, on any number of replicas;
seeded, resumable training order, optionally grouped by length."""

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
    # Whole batches only, so the spec's batch size is static (TPUs compile the spec's shapes).
    for size, ds in ((4, array_dataset(features, "eval", 4)),
                     (3, array_dataset(features, "predict", 3, tf.distribute.InputContext(2, 1, 4)))):
        assert {spec.shape[0] for spec in ds.element_spec.values()} == {size}


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


# ---- Grouping training batches by length -------------------------------------------------------


def _grouped(n, batch, seed=7, skip=0, take=None, lengths=None):
    """The example ids of the first `take` training batches (each an array of `batch` ids)."""
    from bert_tf.data.batching import array_dataset

    lengths = np.random.default_rng(0).integers(1, 100, n) if lengths is None else lengths
    ds = array_dataset({"id": np.arange(n, dtype=np.int32)}, "train", batch, seed=seed, skip_batches=skip,
                       lengths=lengths)
    return [b["id"].numpy() for b in ds.take(take or 2 * n // batch)], lengths


def test_grouped_batches_are_windows_sorted_by_length_and_every_example_comes_once_an_epoch():
    from bert_tf.data.batching import GROUP_WINDOW_BATCHES

    batch = 4
    n = 2 * GROUP_WINDOW_BATCHES * batch  # two windows an epoch
    batches, lengths = _grouped(n, batch)
    stream = np.concatenate(batches)
    assert sorted(stream[:n]) == sorted(stream[n:]) == list(range(n))  # two epochs, each example once in each
    for start in range(0, 2 * n // batch, GROUP_WINDOW_BATCHES):
        window = [lengths[b] for b in batches[start : start + GROUP_WINDOW_BATCHES]]
        # Sorted by length, then cut: no two batches of a window overlap in length.
        ranges = sorted((b.min(), b.max()) for b in window)
        assert all(high <= low for (_, high), (low, _) in zip(ranges[:-1], ranges[1:], strict=True))
        assert [r[0] for r in ranges] != [b.min() for b in window]  # the batches are shuffled in the window
    assert np.mean([lengths[b].max() - lengths[b].min() for b in batches]) < 4  # of lengths 1 to 99


def test_grouped_batches_resume_exactly_and_follow_the_seed():
    n, batch = 230, 4  # windows of 200 and 30 examples; the epoch's last examples join the next epoch's first
    batches, _ = _grouped(n, batch, take=150)
    stream = np.concatenate(batches)
    assert sorted(stream[:n]) == sorted(stream[n : 2 * n]) == list(range(n))
    resumed, _ = _grouped(n, batch, skip=97, take=53)
    assert all((a == b).all() for a, b in zip(resumed, batches[97:], strict=True))
    again, _ = _grouped(n, batch, take=150)
    other, _ = _grouped(n, batch, seed=8, take=150)
    assert all((a == b).all() for a, b in zip(again, batches, strict=True))
    assert not all((a == b).all() for a, b in zip(other, batches, strict=True))
