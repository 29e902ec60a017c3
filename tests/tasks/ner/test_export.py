"""The token-classifier export's windows: `word_windows` (every sentence of a batch at once, in
graph) cuts sentences exactly as `ner_inputs.windows` (one sentence, Python) does."""

import numpy as np
import tensorflow as tf

from bert_tf.tasks.ner.export import word_windows
from bert_tf.tasks.ner.inputs import windows


def _windows(counts, row_splits, capacity, context_words):
    """word_windows in a graph, as the export runs it."""
    run = tf.function(lambda c, s: word_windows(c, s, capacity, context_words))
    return [x.numpy().tolist() for x in run(tf.constant(counts, tf.int64), tf.constant(row_splits, tf.int64))]


def test_word_windows_cut_every_sentence_as_ner_inputs_windows_does():
    rng = np.random.default_rng(0)
    for capacity, context_words in [(6, 2), (6, 0), (10, 16), (3, 1), (126, 16)]:
        piece_counts = [1, 1, 1, 2, 3, capacity // 2, capacity]
        sentences = [rng.choice(piece_counts, size=rng.integers(0, 40)).tolist() for _ in range(40)]
        sentences[5] = []  # a sentence without words
        offsets = np.cumsum([0] + [len(s) for s in sentences])
        expected = [
            (offsets[i] + left, offsets[i] + start, offsets[i] + end)
            for i, counts in enumerate(sentences)
            for left, start, end in windows(counts, capacity, context_words)
        ]
        got = _windows([c for s in sentences for c in s], offsets, capacity, context_words)
        assert sorted(zip(*got, strict=True)) == sorted(expected), (capacity, context_words)


def test_word_windows_of_a_batch_without_words():
    assert _windows([], [0, 0, 0], 6, 2) == [[], [], []]
