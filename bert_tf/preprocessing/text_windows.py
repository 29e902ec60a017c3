"""Texts longer than the model's window, as overlapping windows of it, in graph (TensorFlow).

BERT reads `seq_length` positions at most. A text whose pieces do not fit is cut into windows
of `seq_length`, the way run_squad.py cuts a long document (Devlin's answer to long inputs):
window k starts `stride` pieces after window k - 1, each holds as many pieces as fit, and the
last one ends at the text's end or at `max_windows`. Each window is packed as the original packs
a text (`BertPackInputs`: [CLS] A [SEP] (B [SEP])), so a text that fits gets exactly its usual
inputs, as one window.

A pair is windowed along its longer segment (A on ties): the shorter one is repeated in every
window, cut to half of the pair's room at most (`longest_first_lengths` never cuts it further),
and the longer one takes the rest of the room. Which segment is A and which B never changes, so
the segment ids mean what they meant in fine-tuning.

The outputs for a batch of texts are the packed windows of all of them, in text order, with
`window_text` (which text each window belongs to) and `window_count` (windows per text);
`pool_windows` turns the windows' outputs back into one row per text.
"""

import tensorflow as tf

from bert_tf.errors import shown

WINDOW_POOLING = ("max", "mean")
# The dataset keys beside the encoder's inputs: the text each window belongs to (int32 [windows]),
# the windows of each text (int32 [texts]) and whether a text was cut at its last window
# (int32 [texts]).
WINDOW_TEXT, WINDOW_COUNT, WINDOW_CUT = "window_text", "window_count", "window_cut"


def check_windows(max_windows, stride, seq_length):
    """Checks a window setting: at least one window, a stride of at least one piece, and a
    window with room for a piece of the longer segment of a pair.

    Args:
        max_windows: The most windows a text may take.
        stride: The pieces between window starts.
        seq_length: The packed length of a window.

    Raises:
        ValueError: One of them is out of its range (the message names it).
    """
    if not isinstance(max_windows, int) or max_windows < 1:
        raise ValueError(f"{shown.max_windows}={max_windows} must be a whole number of at least 1")
    if max_windows > 1:
        if not isinstance(stride, int) or stride < 1:
            raise ValueError(f"{shown.doc_stride}={stride} must be a whole number of at least 1")
        if seq_length < 4:
            raise ValueError(f"{shown.max_seq_length}={seq_length}: windows need at least 4 positions, room for a "
                             f"pair's [CLS] A [SEP] B [SEP]")


def default_stride(seq_length):
    """The stride when none is given: half the window, so each piece but the text's first and
    last half-window's is read in two windows with context on both sides."""
    return max(1, seq_length // 2)


def record_windows(record, seq_length, doc_stride=None):
    """`(max_windows, stride)` of a run's record (its `max_windows` and `doc_stride` fields) for
    windows of `seq_length`: `doc_stride` where given, else the record's, else half of
    `seq_length`."""
    stride = doc_stride if doc_stride is not None else record.doc_stride
    return record.max_windows, stride if stride is not None else default_stride(seq_length)


def export_windows(record, seq_length, doc_stride=None):
    """`record_windows` for a run that reads windows (`max_windows` above 1), else None (texts cut
    to seq_length); a `doc_stride` given for a run that cuts is a ValueError."""
    if record.max_windows > 1:
        return record_windows(record, seq_length, doc_stride)
    if doc_stride is not None:
        raise ValueError(f"{shown.doc_stride}={doc_stride} is for a run that reads windows; this run cut its texts "
                         f"(max_windows 1)")
    return None


def take_rows(segment, rows, starts, lengths):
    """`segment[rows[w], starts[w]:starts[w] + lengths[w]]` for each w.

    Args:
        segment: A `tf.RaggedTensor [n, (values)]`.
        rows, starts, lengths: int64 `[w]`: the row, first value and count of each slice.

    Returns:
        A `tf.RaggedTensor [w, (values)]` of the same dtype.
    """
    first = tf.gather(tf.cast(segment.row_starts(), tf.int64), rows) + starts
    index = tf.ragged.range(first, first + lengths)
    values = tf.gather(segment.flat_values, index.flat_values)
    return tf.RaggedTensor.from_row_splits(values, index.row_splits, validate=False)


def doc_spans(length, width, stride, max_windows=None):
    """run_squad.py's doc spans of texts of `length` pieces, vectorized: each span holds up to
    `width` pieces and starts `min(stride, width)` pieces after the one before; the last ends at
    the text's end (or at `max_windows` spans).

    Args:
        length: int64 `[texts]`, each text's pieces.
        width: int64 `[texts]` or a scalar: the pieces a span holds.
        stride: The pieces between span starts (an int).
        max_windows: The most spans a text takes; None: as many as it needs.

    Returns:
        `(text, start, span_length, count)`: int64 `[spans]` the text of each span (texts in
        order), its first piece and its pieces; int64 `[texts]` each text's spans. A text of no
        pieces has one span of none.
    """
    width = tf.broadcast_to(tf.cast(width, tf.int64), tf.shape(length))
    step = tf.maximum(tf.minimum(tf.constant(stride, tf.int64), width), 1)
    count = 1 + (tf.maximum(length - width, 0) + step - 1) // step  # the spans after the first, plus it
    if max_windows is not None:
        count = tf.minimum(count, max_windows)
    text = tf.repeat(tf.range(tf.size(count, out_type=tf.int64)), count)
    start = tf.ragged.range(count).flat_values * tf.gather(step, text)
    span_length = tf.minimum(tf.gather(width, text), tf.gather(length, text) - start)
    return text, start, span_length, count


def window_segments(segments, seq_length, max_windows, stride):
    """Cuts each text's segments into the windows that `BertPackInputs(seq_length)` packs whole.

    Args:
        segments: One int `tf.RaggedTensor [texts, (pieces)]` (single segments) or a list of two
            (A and B; a row whose B is empty is a single segment, as the packer takes it).
        seq_length: The packed length of a window (an int of at least 4).
        max_windows: The most windows a text takes (an int of at least 1).
        stride: The pieces between window starts (an int of at least 1; more than a window's
            room is cut to it, so that no piece between two windows is skipped).

    Returns:
        `(window_segments, window_text, window_count, cut)`: the segments of every window (a list
        as `segments`, `[windows, (pieces)]`, texts in order, each text's windows in order);
        int32 `[windows]`, the text of each window; int32 `[texts]`, each text's windows; and bool
        `[texts]`, True where a text's pieces go past its last window.
    """
    segments = list(segments) if isinstance(segments, (list, tuple)) else [segments]
    len_a = tf.cast(segments[0].row_lengths(), tf.int64)
    len_b = tf.cast(segments[1].row_lengths(), tf.int64) if len(segments) == 2 else tf.zeros_like(len_a)
    pair = len_b > 0
    room = tf.where(pair, tf.constant(seq_length - 3, tf.int64), tf.constant(seq_length - 2, tf.int64))
    a_long = len_a >= len_b
    long_len = tf.where(a_long, len_a, len_b)
    # The shorter segment whole when the pair fits (then the longer one fits beside it too).
    short_kept = tf.minimum(tf.where(a_long, len_b, len_a), room // 2)
    width = room - short_kept  # the longer segment's pieces in one window
    text, long_start, long_length, count = doc_spans(long_len, width, stride, max_windows)
    step = tf.maximum(tf.minimum(tf.constant(stride, tf.int64), width), 1)
    cut = long_len > (count - 1) * step + width

    at = lambda values: tf.gather(values, text)  # noqa: E731 - a text's value, per window
    windowed_a = at(a_long)
    zero = tf.zeros_like(text)
    out = [take_rows(segments[0], text, tf.where(windowed_a, long_start, zero),
                     tf.where(windowed_a, long_length, at(short_kept)))]
    if len(segments) == 2:
        out.append(take_rows(segments[1], text, tf.where(windowed_a, zero, long_start),
                             tf.where(windowed_a, at(short_kept), long_length)))
    return out, tf.cast(text, tf.int32), tf.cast(count, tf.int32), cut


def pool_windows(values, window_text, num_texts, mode, weights=None):
    """The windows' rows of `values` pooled into one row per text.

    Args:
        values: float `[windows, ...]`, one row per window.
        window_text: int32 `[windows]`, the text of each window (`window_segments`).
        num_texts: The number of texts (an int or an int32 scalar tensor).
        mode: "max" (each value's largest over the text's windows) or "mean" (their mean,
            weighted by `weights`).
        weights: float `[windows]`, each window's weight in the mean (e.g. its real tokens);
            None: equal weights.

    Returns:
        float `[texts, ...]`. A text of one window gets its row exactly: its weight's share is 1.
    """
    if mode not in WINDOW_POOLING:
        raise ValueError(f"{shown.window_pooling}={mode!r} is not one of {', '.join(WINDOW_POOLING)}")
    if mode == "max":
        return tf.math.unsorted_segment_max(values, window_text, num_texts)
    weights = tf.ones(tf.shape(window_text), values.dtype) if weights is None else tf.cast(weights, values.dtype)
    share = weights / tf.gather(tf.math.unsorted_segment_sum(weights, window_text, num_texts), window_text)
    share = tf.reshape(share, tf.concat([tf.shape(share), tf.ones([tf.rank(values) - 1], tf.int32)], 0))
    return tf.math.unsorted_segment_sum(values * share, window_text, num_texts)


class WindowPacker:
    """`(text_a, text_b)` string batches -> the packed windows of every text, with the keys
    `WINDOW_TEXT`, `WINDOW_COUNT` and `WINDOW_CUT` beside the encoder's inputs.

    Args:
        tokenizer: A `bert_tf.preprocessing.BertTokenizer`.
        packer: A `BertPackInputs`; its `seq_length` is the window's.
        pair: Whether text_b is packed.
        max_windows: The most windows a text takes (see `window_segments`).
        stride: The pieces between window starts.
    """

    def __init__(self, tokenizer, packer, pair, max_windows, stride):
        check_windows(max_windows, stride, packer.seq_length)
        self.tokenizer, self.packer, self.pair = tokenizer, packer, pair
        self.max_windows, self.stride = max_windows, stride

    def __call__(self, text_a, text_b=None):
        segments = [self.tokenizer(text_a)]
        if self.pair:
            segments.append(self.tokenizer(text_b))
        windows, text, count, cut = window_segments(segments, self.packer.seq_length, self.max_windows, self.stride)
        packed = self.packer(windows)
        return {**packed, WINDOW_TEXT: text, WINDOW_COUNT: count, WINDOW_CUT: tf.cast(cut, tf.int32)}
