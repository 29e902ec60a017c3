import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.lengths import bucketed_length, cut_padding


def _mask(lengths, seq):
    return np.array([[1] * n + [0] * (seq - n) for n in lengths], np.int32)


@pytest.mark.parametrize(
    "lengths, seq, bucket, expected",
    [
        ([3, 5], 10, 4, 8),  # longest 5 -> next multiple of 4
        ([3, 5], 10, 8, 8),
        ([8], 10, 4, 8),  # already a multiple
        ([9], 10, 4, 10),  # 12 is past the packed length
        ([0, 0], 10, 4, 4),  # an all-padding batch keeps one bucket
        ([3], 10, 16, 10),
        ([1], 10, 1, 1),
    ],
)
def test_bucketed_length_is_the_longest_row_rounded_up(lengths, seq, bucket, expected):
    assert int(bucketed_length(tf.constant(_mask(lengths, seq)), bucket)) == expected


def test_bucketed_length_reads_the_last_axis_of_every_row():
    # [batch, choices, seq]: the longest over every choice of every example
    mask = np.stack([_mask([2, 6], 12), _mask([1, 3], 12)])
    assert int(bucketed_length(tf.constant(mask), 4)) == 8


def test_cut_padding_cuts_only_the_named_keys():
    mask = _mask([3, 5], 10)
    ids = np.arange(20, dtype=np.int32).reshape(2, 10)
    batch = {"input_mask": tf.constant(mask), "input_word_ids": tf.constant(ids), "label": tf.constant([1, 0])}
    out = cut_padding(batch, 4, ("input_mask", "input_word_ids"))
    np.testing.assert_array_equal(out["input_word_ids"].numpy(), ids[:, :8])
    np.testing.assert_array_equal(out["input_mask"].numpy(), mask[:, :8])
    np.testing.assert_array_equal(out["label"].numpy(), [1, 0])
    assert cut_padding(batch, None, ("input_mask",)) is batch


def test_a_bucket_below_one_is_refused():
    with pytest.raises(ValueError, match="length_bucket=0"):
        bucketed_length(tf.constant(_mask([3], 4)), 0)
