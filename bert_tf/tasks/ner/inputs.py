"""Tagged sentences -> token-classification inputs: first-sub-token labels and windows (paper §5.3).

Each word is WordPiece-tokenized on its own (the in-graph `BertTokenizer`, FullTokenizer's ids,
cased or uncased), as the paper's NER set-up does; its tag goes on its first piece, and the other
pieces (and [CLS], [SEP], padding) have label weight 0: the loss ignores them and prediction
reads no tag there. A word that tokenizes to nothing (only characters the original strips) is
one [UNK], so that every word has a first piece.

A sentence longer than max_seq_length - 2 pieces is split into windows that tag each of its
words exactly once (`windows`). The arrays are built once, in numpy; `array_dataset` batches
them.
"""

import numpy as np

from bert_tf.errors import shown

# Words tokenized per call: bounds the memory of one ragged batch.
_TOKENIZE_BATCH = 8192


def word_pieces(words, tokenizer):
    """`{word: [ids]}` for every distinct word of `words`, each tokenized alone by `tokenizer`
    (a `bert_tf.preprocessing.BertTokenizer`); [UNK] for a word without pieces."""
    import tensorflow as tf

    unk = tokenizer.vocabulary.index("[UNK]")
    distinct = list(dict.fromkeys(words))
    pieces = {}
    for i in range(0, len(distinct), _TOKENIZE_BATCH):
        batch = distinct[i : i + _TOKENIZE_BATCH]
        ids = tokenizer(tf.constant(batch))
        values, splits = ids.flat_values.numpy().tolist(), ids.row_splits.numpy().tolist()
        for j, word in enumerate(batch):
            pieces[word] = values[splits[j] : splits[j + 1]] or [unk]
    return pieces


def windows(piece_counts, capacity, context_words):
    """How a sentence of words with `piece_counts` pieces each is cut into windows of at most
    `capacity` pieces: a list of `(left, start, end)`, the window holding words [left, end) and
    tagging words [start, end) (the words before `start` are context, weight 0).

    The first window starts at word 0 without context; each next one tags from the word after
    the previous window's last. Its context is as many of the `context_words` words before
    `start` as take at most `capacity // 2` pieces and leave room for word `start`; then it
    takes as many words as fit. Every word is tagged exactly once, and all but the first
    window's first words see some left context. `piece_counts` are at most `capacity` (longer
    words are cut first) and at least 1.
    """
    counts = [int(c) for c in piece_counts]
    if any(not 1 <= c <= capacity for c in counts):
        raise ValueError(f"piece counts must be between 1 and capacity {capacity}, got {counts}")
    out, start = [], 0
    while start < len(counts):
        left, context = start, 0
        while (
            left > 0
            and start - left < context_words
            and context + counts[left - 1] <= capacity // 2
            and context + counts[left - 1] + counts[start] <= capacity
        ):
            left -= 1
            context += counts[left]
        end, used = start, context
        while end < len(counts) and used + counts[end] <= capacity:
            used += counts[end]
            end += 1
        out.append((left, start, end))
        start = end
    return out


def encode_sentences(sentences, labels, tokenizer, max_seq_length, context_words=0):
    """Sentences -> a dict of numpy arrays, one row per window:

    - `input_word_ids`, `input_mask`, `input_type_ids`: int32 `[windows, max_seq_length]`,
      [CLS] pieces [SEP] and zero padding (one segment);
    - `label_ids`: int32 `[windows, max_seq_length]`, the tag's index in `labels` on the first
      piece of each tagged word, 0 elsewhere (and for untagged sentences);
    - `label_weights`: float32 `[windows, max_seq_length]`, 1 on those first pieces, else 0;
    - `sentence`: int32 `[windows]`, the index of the window's sentence.

    Reading `label_weights > 0` positions row by row gives every word of every sentence once,
    in order (`tags_of`).
    """
    vocab = {t: i for i, t in enumerate(tokenizer.vocabulary)}
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    index = {tag: i for i, tag in enumerate(labels)}
    capacity = max_seq_length - 2
    if capacity < 1:
        raise ValueError(f"{shown.max_seq_length} {max_seq_length} leaves no room for a word between [CLS] and [SEP]")
    pieces = word_pieces([w for s in sentences for w in s.words], tokenizer)
    rows = []
    for number, sentence in enumerate(sentences):
        words = [pieces[w][:capacity] for w in sentence.words]
        for left, start, end in windows([len(p) for p in words], capacity, context_words):
            ids, label_ids, weights = [cls], [0], [0.0]
            for i in range(left, end):
                tagged = i >= start
                tag = sentence.tags[i] if sentence.tags is not None and tagged else None
                if tag is not None and tag not in index:
                    raise ValueError(f"{sentence.where}: tag {tag!r} is not one of the model's labels {labels}")
                ids += words[i]
                label_ids += [index[tag] if tag is not None else 0] + [0] * (len(words[i]) - 1)
                weights += [1.0 if tagged else 0.0] + [0.0] * (len(words[i]) - 1)
            rows.append((ids + [sep], label_ids + [0], weights + [0.0], number))
    n = len(rows)
    out = {
        "input_word_ids": np.zeros((n, max_seq_length), np.int32),
        "input_mask": np.zeros((n, max_seq_length), np.int32),
        "input_type_ids": np.zeros((n, max_seq_length), np.int32),
        "label_ids": np.zeros((n, max_seq_length), np.int32),
        "label_weights": np.zeros((n, max_seq_length), np.float32),
        "sentence": np.array([r[3] for r in rows], np.int32),
    }
    for row, (ids, label_ids, weights, _) in enumerate(rows):
        length = len(ids)
        out["input_word_ids"][row, :length] = ids
        out["input_mask"][row, :length] = 1
        out["label_ids"][row, :length] = label_ids
        out["label_weights"][row, :length] = weights
    return out


def tags_of(values, label_weights, sentence_lengths):
    """Per-position `values` `[windows, seq]` (e.g. predicted label ids) back to one list per
    sentence of one value per word: the positions where `label_weights > 0`, read row by row
    (rows past the real windows, padding, have no such position)."""
    flat = np.asarray(values)[np.asarray(label_weights) > 0]
    if len(flat) != sum(sentence_lengths):
        raise ValueError(f"{len(flat)} tagged positions for {sum(sentence_lengths)} words")
    bounds = np.cumsum([0, *sentence_lengths])
    return [flat[bounds[i] : bounds[i + 1]].tolist() for i in range(len(sentence_lengths))]
