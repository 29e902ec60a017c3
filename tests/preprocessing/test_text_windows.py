"""Windows of long texts: the rule restated in plain Python (run_squad.py's doc spans, capped),
packing, and pooling restated in numpy."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import reported
from bert_tf.preprocessing import BertPackInputs
from bert_tf.preprocessing.text_windows import (
    WINDOW_COUNT,
    WINDOW_CUT,
    WINDOW_TEXT,
    WindowPacker,
    check_windows,
    pool_windows,
    window_segments,
)


def _spans(length, width, stride, max_windows):
    """run_squad.py's doc spans over `length` pieces, `width` a window, at most `max_windows`:
    [(start, length)], and whether pieces are left after the last."""
    spans, start = [], 0
    while start < length and len(spans) < max_windows:
        n = min(length - start, width)
        spans.append((start, n))
        if start + n == length:
            break
        start += min(n, stride)
    return spans or [(0, 0)], (spans[-1][0] + spans[-1][1] if spans else 0) < length


def _expected_windows(a, b, seq_length, max_windows, stride):
    """The windows of one text, as [(a pieces, b pieces)], and whether it is cut."""
    room = seq_length - 3 if b else seq_length - 2
    if len(a) + len(b) <= room:
        return [(a, b)], False
    long, short = (a, b) if len(a) >= len(b) else (b, a)
    kept = short[: room // 2]
    spans, cut = _spans(len(long), room - len(kept), stride, max_windows)
    windows = [(long[s:s + n], kept) for s, n in spans]
    return (windows if len(a) >= len(b) else [(k, w) for w, k in windows]), cut


@pytest.mark.parametrize("pair", [False, True])
def test_windows_follow_run_squads_doc_spans_capped_at_max_windows(pair):
    rng = np.random.default_rng(0)
    texts = []
    for _ in range(60):
        a = [int(v) for v in rng.integers(5, 99, rng.integers(0, 30))]
        b = [int(v) for v in rng.integers(5, 99, rng.integers(0, 12))] if pair else []
        texts.append((a, b))
    for seq_length, max_windows, stride in [(8, 3, 2), (10, 10, 4), (12, 2, 20), (6, 5, 1)]:
        segments = [tf.ragged.constant([a for a, _ in texts], tf.int32, ragged_rank=1, inner_shape=())]
        if pair:
            segments.append(tf.ragged.constant([b for _, b in texts], tf.int32, ragged_rank=1, inner_shape=()))
        out, text, count, cut = window_segments(segments, seq_length, max_windows, stride)
        expected = [_expected_windows(a, b, seq_length, max_windows, stride) for a, b in texts]
        got_a = out[0].to_list()
        got_b = out[1].to_list() if pair else [[] for _ in got_a]
        flat = [w for windows, _ in expected for w in windows]
        assert [(list(x), list(y)) for x, y in flat] == list(zip(got_a, got_b, strict=True)), (seq_length, stride)
        assert count.numpy().tolist() == [len(w) for w, _ in expected]
        assert text.numpy().tolist() == [i for i, (w, _) in enumerate(expected) for _ in w]
        assert cut.numpy().tolist() == [c for _, c in expected]


def test_a_text_that_fits_is_packed_as_the_packer_packs_it_alone():
    a = tf.ragged.constant([[7, 8, 9], [7] * 20, [5]], tf.int32)
    b = tf.ragged.constant([[10, 11], [12, 13], []], tf.int32)
    packer = BertPackInputs(8, 2, 3)
    # A "tokenizer" whose texts name rows of ids.
    windows = WindowPacker(lambda t: {"a": a, "b": b}[t], packer, pair=True, max_windows=4, stride=2)
    out = windows("a", "b")
    plain = packer([a, b])
    first = out[WINDOW_TEXT].numpy().tolist()
    for row in (0, 2):  # the texts that fit: their one window is the plain packing
        w = first.index(row)
        for name in plain:
            assert out[name][w].numpy().tolist() == plain[name][row].numpy().tolist()
    assert out[WINDOW_COUNT].numpy().tolist() == [1, 4, 1]
    assert out[WINDOW_CUT].numpy().tolist() == [0, 1, 0]  # 20 pieces: 3 + 3 windows of 3 cover 9
    long_rows = [w for w, t in enumerate(first) if t == 1]
    assert out["input_word_ids"][long_rows[0]].numpy().tolist() == [2, 7, 7, 7, 3, 12, 13, 3]
    assert out["input_type_ids"][long_rows[0]].numpy().tolist() == [0, 0, 0, 0, 0, 1, 1, 1]


def test_pooling_is_the_max_or_the_weighted_mean_of_each_texts_windows():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(7, 3)).astype(np.float32)
    text = np.array([0, 0, 0, 1, 2, 2, 3], np.int32)
    weights = np.array([5, 3, 2, 4, 1, 6, 9], np.float32)
    got_max = pool_windows(tf.constant(values), tf.constant(text), 4, "max").numpy()
    got_mean = pool_windows(tf.constant(values), tf.constant(text), 4, "mean", tf.constant(weights)).numpy()
    for t in range(4):
        rows = text == t
        np.testing.assert_allclose(got_max[t], values[rows].max(0))
        np.testing.assert_allclose(got_mean[t], (values[rows] * weights[rows, None]).sum(0) / weights[rows].sum(),
                                   rtol=1e-6)
    # One window: its row exactly, whatever its weight.
    assert np.array_equal(got_mean[1], values[3]) and np.array_equal(got_mean[3], values[6])


def test_bad_window_settings_name_the_setting():
    with pytest.raises(ValueError, match="max_windows=0"):
        check_windows(0, 4, 16)
    with pytest.raises(ValueError, match="doc_stride=0"):
        check_windows(2, 0, 16)
    with pytest.raises(ValueError, match="max_seq_length=3"):
        check_windows(2, 1, 3)
    with pytest.raises(ValueError, match="--max_windows=0"), reported(flag_names=("max_windows",)):
        check_windows(0, 4, 16)
    with pytest.raises(ValueError, match="window_pooling='sum'"):
        pool_windows(tf.zeros([1, 1]), tf.zeros([1], tf.int32), 1, "sum")
