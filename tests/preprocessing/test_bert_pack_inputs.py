import numpy as np
import pytest
import tensorflow as tf

from bert_tf.preprocessing import BertPackInputs


def _original_truncation(len_a, len_b, max_length):
    """The original's _truncate_seq_pair, restated on lengths."""
    while len_a + len_b > max_length:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_pairs_truncate_longest_first_like_the_original():
    cases = [(la, lb, seq) for seq in range(3, 15) for la in range(0, 13) for lb in range(1, 13)]
    a = tf.ragged.constant([list(range(10, 10 + la)) for la, _, _ in cases], dtype=tf.int64)
    b = tf.ragged.constant([list(range(50, 50 + lb)) for _, lb, _ in cases], dtype=tf.int64)
    for seq in range(3, 15):
        rows = [i for i, c in enumerate(cases) if c[2] == seq]
        out = BertPackInputs(seq, 101, 102)([tf.gather(a, rows), tf.gather(b, rows)])
        for row, i in enumerate(rows):
            la, lb, _ = cases[i]
            ka, kb = _original_truncation(la, lb, seq - 3)
            # The original's `if tokens_b:` after truncation: a B cut to nothing (seq 3 or 4) adds no [SEP].
            second = [*range(50, 50 + kb), 102] if kb else []
            expected = [101, *range(10, 10 + ka), 102, *second]
            expected += [0] * (seq - len(expected))
            assert out["input_word_ids"][row].numpy().tolist() == expected, (la, lb, seq)
            types = [0] * (ka + 2) + [1] * len(second)
            assert out["input_type_ids"][row].numpy().tolist() == types + [0] * (seq - len(types)), (la, lb, seq)
            assert out["input_mask"][row].numpy().sum() == ka + 2 + len(second)


def test_single_segment_and_empty_second_segment():
    a = tf.ragged.constant([[5, 6, 7, 8, 9, 10], [5]], dtype=tf.int32)
    single = BertPackInputs(6, 2, 3, padding_id=0)(a)
    np.testing.assert_array_equal(single["input_word_ids"], [[2, 5, 6, 7, 8, 3], [2, 5, 3, 0, 0, 0]])
    np.testing.assert_array_equal(single["input_mask"], [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    np.testing.assert_array_equal(single["input_type_ids"], np.zeros((2, 6)))
    # An empty B packs as a single segment (the original's `if tokens_b:`).
    pair = BertPackInputs(6, 2, 3)([a, tf.ragged.constant([[], [7]], dtype=tf.int32)])
    np.testing.assert_array_equal(pair["input_word_ids"], [[2, 5, 6, 7, 8, 3], [2, 5, 3, 7, 3, 0]])
    np.testing.assert_array_equal(pair["input_type_ids"], [[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 0]])


def test_from_vocabulary_and_errors():
    layer = BertPackInputs.from_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]"], seq_length=8)
    assert (layer.start_of_sequence_id, layer.end_of_segment_id, layer.padding_id) == (2, 3, 0)
    assert BertPackInputs.from_config(layer.get_config()).get_config() == layer.get_config()
    with pytest.raises(ValueError, match=r"no \[CLS\]"):
        BertPackInputs.from_vocabulary(["[PAD]", "[SEP]"], seq_length=8)
    with pytest.raises(ValueError, match="seq_length 2 leaves no room"):
        BertPackInputs(2, 1, 2)


def test_a_call_may_pack_to_another_length_given_as_a_tensor():
    """TF Hub's `bert_pack_inputs(segments, seq_length=N)`: the same packing as a layer of that length."""
    a = tf.ragged.constant([[5, 6, 7, 8, 9, 10], [5]], dtype=tf.int32)
    b = tf.ragged.constant([[11, 12, 13], [7]], dtype=tf.int32)
    layer = BertPackInputs(16, 2, 3)
    pack = tf.function(lambda x, y, n: layer([x, y], seq_length=n))
    for seq in (5, 8, 11):
        got = pack(a, b, tf.constant(seq))
        want = BertPackInputs(seq, 2, 3)([a, b])
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{seq} {name}")
