"""run_squad.py's answers in graph (TensorFlow): a question and a context of any length in, the
answer text, its characters in the context, its score and the n-best list out, by the rules of
`bert_tf.tasks.squad.features` (doc spans, the max-context rule) and
`bert_tf.tasks.squad.predictions` (n-best spans, the answer text's projection onto the original
words, v2.0's null answer). The SQuAD export's serving function is built on it.

Letters in shape comments: B the requests' examples, W their windows (doc spans), L a window's
packed length, C the candidate spans of all windows.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.preprocessing.text_windows import doc_spans, take_rows
from bert_tf.tasks.squad.features import PARAGRAPH_WHITESPACE
from bert_tf.tasks.squad.predictions import NO_ANSWER, NULL_SCORE_START

# The original's is_whitespace for paragraphs: only these characters split words.
_WORD_BREAK = f"[{PARAGRAPH_WHITESPACE}]+"
_SPACE = 32  # " ": the only character get_final_text strips


def _segment_first(values, segments, num_segments):
    """int64 `[num_segments]`: the index of each segment's first element (its size where none)."""
    index = tf.range(tf.size(segments, out_type=tf.int64))
    big = tf.size(segments, out_type=tf.int64)
    return tf.math.unsorted_segment_min(tf.where(values, index, big), segments, num_segments)


class Paragraphs:
    """The contexts as run_squad.py reads them: whitespace words (the five characters of
    PARAGRAPH_WHITESPACE), each tokenized alone, and the maps between pieces and words.

    Attributes:
        words: string ragged `[B, (words)]`.
        word_chars: int64 ragged `[B, (words)]`, each word's first character in its context.
        pieces: int ragged `[B, (pieces)]`, the words' WordPiece ids, word by word.
        piece_word: int64 ragged `[B, (pieces)]`, each piece's word (its index in the row).
    """

    def __init__(self, tokenizer, context):
        words, begin, _ = tf_text.regex_split_with_offsets(context, _WORD_BREAK)
        rows = words.value_rowids()
        begin = tf.cast(begin.flat_values, tf.int32)
        prefix = tf.strings.substr(tf.gather(context, rows), tf.zeros_like(begin), begin)
        self.words = words
        self.word_chars = words.with_flat_values(tf.cast(tf.strings.length(prefix, unit="UTF8_CHAR"), tf.int64))
        pieces = tokenizer(words.flat_values)  # [words, (pieces)]
        splits = tf.gather(pieces.row_splits, words.row_splits)
        self.pieces = tf.RaggedTensor.from_row_splits(pieces.flat_values, splits, validate=False)
        local_word = tf.ragged.range(words.row_lengths()).flat_values
        self.piece_word = tf.RaggedTensor.from_row_splits(
            tf.repeat(local_word, pieces.row_lengths()), tf.cast(splits, tf.int64), validate=False)


def max_context(text, start, span_length, piece_starts, num_pieces):
    """bool ragged `[W, (span pieces)]`: whether each span is its piece's best one, where a span
    scores min(left context, right context) + 0.01 * its length and the first best span wins
    (the original's _check_is_max_context; float64, as Python computes it).

    Args:
        text, start, span_length: int64 `[W]`, as `doc_spans` gives them.
        piece_starts: int64 `[B]`, each example's first piece among all examples' pieces.
        num_pieces: The examples' pieces together (an int64 scalar).
    """
    position = tf.ragged.range(span_length)  # [W, (pieces)]
    window = position.value_rowids()
    p = position.flat_values
    length = tf.gather(span_length, window)
    score = tf.cast(tf.minimum(p, length - 1 - p), tf.float64) + 0.01 * tf.cast(length, tf.float64)
    piece = tf.gather(piece_starts, tf.gather(text, window)) + tf.gather(start, window) + p  # over all examples
    best = tf.math.unsorted_segment_max(score, piece, num_pieces)
    at_best = tf.equal(score, tf.gather(best, piece))
    first = tf.math.unsorted_segment_min(tf.where(at_best, window, tf.size(text, out_type=tf.int64)), piece,
                                         num_pieces)
    return position.with_flat_values(at_best & tf.equal(window, tf.gather(first, piece)))


def _detokenize(pieces):
    """string `[C]`: predictions.py's `_detokenize` of each row of string pieces `[C, (pieces)]`."""
    text = tf.strings.reduce_join(pieces, axis=-1, separator=" ")
    text = tf.strings.regex_replace(tf.strings.regex_replace(text, " ##", ""), "##", "")
    return tf.strings.strip(tf.strings.regex_replace(text, r"\s+", " "))


def _first_occurrence(haystack, needle):
    """int64 `[C]`: Python's `haystack.find(needle)` in characters, row by row; -1 when absent."""
    chars = tf.strings.unicode_decode(haystack, "UTF-8")
    size = tf.cast(chars.row_lengths(), tf.int64)
    chars = chars.to_tensor(-1)  # [C, T]
    n = tf.cast(tf.strings.length(needle, unit="UTF8_CHAR"), tf.int64)
    first = tf.strings.unicode_decode(needle, "UTF-8").to_tensor(-2, shape=[None, 1])[:, 0]  # -2: no character
    place = tf.range(tf.shape(chars, out_type=tf.int64)[1])[None, :]
    # Only the places whose first character matches are compared whole.
    row, at = tf.unstack(tf.where(tf.equal(chars, first[:, None]) & (place <= (size - n)[:, None])), axis=1)
    match = tf.equal(tf.strings.substr(tf.gather(haystack, row), tf.cast(at, tf.int32),
                                       tf.cast(tf.gather(n, row), tf.int32), unit="UTF8_CHAR"), tf.gather(needle, row))
    found = tf.math.unsorted_segment_min(tf.where(match, at, tf.int64.max), row, tf.size(haystack, out_type=tf.int64))
    found = tf.where(tf.equal(found, tf.int64.max), tf.constant(-1, tf.int64), found)
    return tf.where(tf.equal(n, 0), tf.zeros_like(found), found)  # "".find("") is 0


def _char_at(chars, position):
    """int `[C]`: `chars[c, position[c]]`, -1 outside the row (`chars` dense, padded with -1)."""
    inside = (position >= 0) & (position < tf.shape(chars, out_type=tf.int64)[1])
    value = tf.gather(chars, tf.where(inside, position, 0)[:, None], batch_dims=1)[:, 0]
    return tf.where(inside, value, -1)


def final_text(pred_text, orig_text, tok_text):
    """predictions.py's `get_final_text`, row by row, with the BasicTokenizer's words of each
    `orig_text` given joined by spaces (`tok_text`): `(text, first, last)`, the answer and its
    first and last characters in `orig_text` (the whole of it where the alignment fails).

    The characters other than spaces are taken as aligned one to one when both texts have as
    many; `pred_text`'s first occurrence in `tok_text` is mapped back through them.
    """
    orig = tf.strings.unicode_decode(orig_text, "UTF-8").to_tensor(-1)  # [C, To]
    tok = tf.strings.unicode_decode(tok_text, "UTF-8").to_tensor(-1)  # [C, Tt]
    orig_kept = tf.not_equal(orig, _SPACE) & tf.not_equal(orig, -1)
    tok_kept = tf.not_equal(tok, _SPACE) & tf.not_equal(tok, -1)
    orig_rank = tf.cumsum(tf.cast(orig_kept, tf.int64), axis=1) - 1  # each kept character's place among them
    tok_rank = tf.cumsum(tf.cast(tok_kept, tf.int64), axis=1) - 1
    n = tf.cast(tf.strings.length(pred_text, unit="UTF8_CHAR"), tf.int64)
    start = _first_occurrence(tok_text, pred_text)
    end = start + n - 1

    def to_orig(position):
        """orig_text's character for tok_text's `position`, and whether there is one."""
        kept = tf.equal(_char_at(tf.cast(tok_kept, tf.int64), position), 1)
        rank = _char_at(tok_rank, position)
        found = orig_kept & tf.equal(orig_rank, rank[:, None])  # [C, To]: at most one
        return tf.argmax(tf.cast(found, tf.int64), axis=1), kept & tf.reduce_any(found, axis=1)

    first, first_ok = to_orig(start)
    last, last_ok = to_orig(end)
    same_count = tf.equal(tf.reduce_sum(tf.cast(orig_kept, tf.int64), 1), tf.reduce_sum(tf.cast(tok_kept, tf.int64), 1))
    aligned = same_count & (start >= 0) & first_ok & last_ok
    first = tf.where(aligned, first, 0)
    last = tf.where(aligned, last, tf.cast(tf.strings.length(orig_text, unit="UTF8_CHAR"), tf.int64) - 1)
    piece = tf.strings.substr(orig_text, tf.cast(first, tf.int32), tf.cast(last - first + 1, tf.int32),
                              unit="UTF8_CHAR")
    return tf.where(aligned, piece, orig_text), first, last


def _gather_flat(ragged, rows, index):
    """`ragged[rows[c], index[c]]` for each c (int64 `rows` and `index` within the row)."""
    return tf.gather(ragged.flat_values, tf.gather(tf.cast(ragged.row_starts(), tf.int64), rows) + index)


def _by_position(values, positions):
    """`values[w, positions[w, ...]]`: per-window values `[W, L]` at positions `[W, ...]`."""
    flat = tf.reshape(positions, [tf.shape(positions)[0], -1])
    return tf.reshape(tf.gather(values, flat, batch_dims=1), tf.shape(positions))


class Spans:
    """The candidate answers of the examples' windows, as run_squad.py's `_span_candidates` makes
    them: each window's `n_best_size` best starts by its best ends (stable: equal logits keep
    position order), kept when both are in the window's context, the start has its max context
    there, and the span is at most `max_answer_length` pieces; in creation order (window by
    window, start by start, end by end).

    Attributes (each `[C]`): text (int64, the example), start and end (int64, the pieces' places
    in the example's context), start_logit and end_logit (float32), score (their sum in float64).
    """

    def __init__(self, logits, real, text, start, span_length, query_length, n_best_size,
                 max_answer_length, piece_starts, num_pieces):
        start_logits, end_logits = logits
        k = tf.minimum(n_best_size, tf.shape(start_logits)[1])
        lowest = tf.constant(float("-inf"), start_logits.dtype)
        top_start = tf.cast(tf.math.top_k(tf.where(real, start_logits, lowest), k).indices, tf.int64)  # [W, k]
        top_end = tf.cast(tf.math.top_k(tf.where(real, end_logits, lowest), k).indices, tf.int64)
        s = tf.broadcast_to(top_start[:, :, None], [tf.shape(top_start)[0], k, k])  # [W, k, k]
        e = tf.broadcast_to(top_end[:, None, :], tf.shape(s))
        first = (tf.gather(query_length, text) + 2)[:, None, None]  # the context's first position
        end_of_context = first + span_length[:, None, None]
        flags = max_context(text, start, span_length, piece_starts, num_pieces).to_tensor(False)  # [W, pieces]
        flags = tf.pad(flags, [[0, 0], [0, 1]])  # a column of False for the places outside any context
        outside = tf.shape(flags, out_type=tf.int64)[1] - 1
        in_context = (s >= first) & (s < end_of_context) & (e >= first) & (e < end_of_context)
        at_max = _by_position(flags, tf.where(in_context, s - first, outside))
        valid = in_context & at_max & (e >= s) & (e - s + 1 <= max_answer_length)
        window, i, j = tf.unstack(tf.where(valid), axis=1)  # row-major: creation order
        s_place, e_place = tf.gather_nd(top_start, tf.stack([window, i], 1)), tf.gather_nd(top_end,
                                                                                        tf.stack([window, j], 1))
        self.text = tf.gather(text, window)
        offset = tf.gather(start, window) - tf.gather(first[:, 0, 0], window)
        self.start, self.end = s_place + offset, e_place + offset
        self.start_logit = tf.gather_nd(start_logits, tf.stack([window, s_place], 1))
        self.end_logit = tf.gather_nd(end_logits, tf.stack([window, e_place], 1))
        self.score = tf.cast(self.start_logit, tf.float64) + tf.cast(self.end_logit, tf.float64)


def _null_answers(logits, text, span_length, num_texts):
    """v2.0's null answer of each example: `(score_null, start_logit, end_logit)` of the first
    window with the smallest [CLS] start + end score; an example without a window of context
    keeps the original's starting score (NULL_SCORE_START) and logits 0."""
    start_logits, end_logits = logits
    score = tf.cast(start_logits[:, 0], tf.float64) + tf.cast(end_logits[:, 0], tf.float64)
    start_score = tf.constant(NULL_SCORE_START, tf.float64)
    score = tf.where(span_length > 0, score, start_score)
    lowest = tf.math.unsorted_segment_min(score, text, num_texts)
    first = _segment_first(tf.equal(score, tf.gather(lowest, text)) & (span_length > 0), text, num_texts)
    has = first < tf.size(text, out_type=tf.int64)
    safe = tf.minimum(first, tf.maximum(tf.size(text, out_type=tf.int64) - 1, 0))
    zero = tf.zeros([num_texts], start_logits.dtype)
    return (tf.where(has, lowest, start_score), tf.where(has, tf.gather(start_logits[:, 0], safe), zero),
            tf.where(has, tf.gather(end_logits[:, 0], safe), zero))


def span_texts(tokenizer, vocabulary, paragraphs, text, start, end):
    """The answer texts of spans (pieces `start` to `end` of example `text`'s context, int64 `[C]`)
    as run_squad.py projects them onto the original words (`final_text`), and their characters in
    the context: `(answer, start_char, end_char)`, end_char one past the last."""
    first_word = _gather_flat(paragraphs.piece_word, text, start)
    last_word = _gather_flat(paragraphs.piece_word, text, end)
    pieces = tf.gather(vocabulary, take_rows(paragraphs.pieces, text, start, end - start + 1))
    words = take_rows(paragraphs.words, text, first_word, last_word - first_word + 1)  # [C, (words)]
    orig_text = tf.strings.reduce_join(words, axis=-1, separator=" ")
    tok_text = tf.strings.reduce_join(tokenizer.basic_tokenize(orig_text), axis=-1, separator=" ")
    answer, first, last = final_text(_detokenize(pieces), orig_text, tok_text)

    # A character of orig_text is in its j-th word, at its place in that word: words hold no " ".
    lengths = tf.cast(tf.strings.length(words, unit="UTF8_CHAR"), tf.int64)
    word_starts = tf.cumsum(lengths + 1, axis=1, exclusive=True)  # [C, (words)]

    def in_context(place):
        j = tf.reduce_sum(tf.cast(word_starts <= place[:, None], tf.int64), axis=1) - 1
        begin = _gather_flat(word_starts, tf.range(tf.size(place, out_type=tf.int64)), j)
        return _gather_flat(paragraphs.word_chars, text, first_word + j) + place - begin

    return answer, in_context(first), in_context(last) + 1


def _rows(values, rowids, nrows):
    """Each of a dict of `[n]` tensors as ragged `[nrows, (n)]` rows by their sorted `rowids`."""
    return {k: tf.RaggedTensor.from_value_rowids(v, rowids, nrows=nrows) for k, v in values.items()}


def _append(rows, extra, wanted):
    """`rows` with `extra`'s one entry per example appended where `wanted` (bool `[B]`)."""
    count = tf.cast(wanted, tf.int64)
    return {k: tf.concat([rows[k], tf.RaggedTensor.from_row_lengths(tf.repeat(v, count), count)], axis=1)
            for k, v in extra.items()}


def _ranked(example, score):
    """The order of candidates by example, best score first, creation order among equals."""
    order = tf.argsort(score, direction="DESCENDING", stable=True)
    return tf.gather(order, tf.argsort(tf.gather(example, order), stable=True))


def _distinct_texts(example, text, num_texts):
    """int `[B]`: the distinct texts among each example's `text`."""
    key = tf.strings.join([tf.strings.as_string(example), text], separator="\x1f")
    unique = tf.unique(key).y
    owner = tf.strings.to_number(tf.strings.split(unique, "\x1f").to_tensor(shape=[None, 1])[:, 0], tf.int64)
    return tf.math.bincount(owner, minlength=num_texts, maxlength=num_texts, dtype=tf.int64)


def _best_spans_with_texts(tokenizer, vocabulary, paragraphs, spans, num_texts, n_best_size):
    """The spans that can reach each example's n-best list, best first, with their answer texts
    and characters (`span_texts`): a dict of `[C']` fields (`example`, `text`, logits, `score`,
    chars). Projecting a span's text reads all of its words' characters, and a context without
    spaces (Chinese, Japanese) is one word: so the texts are projected for each example's best
    spans only, 4 x n_best_size of them, doubled until they hold n_best_size distinct texts or all
    of its spans. The n-best list drawn from them is the one drawn from all."""
    order = _ranked(spans.text, spans.score)
    ranked = {"example": spans.text, "start": spans.start, "end": spans.end, "start_logit": spans.start_logit,
              "end_logit": spans.end_logit, "score": spans.score}
    ranked = {k: tf.gather(v, order) for k, v in ranked.items()}
    available = tf.math.bincount(ranked["example"], minlength=num_texts, maxlength=num_texts, dtype=tf.int64)
    rank = tf.ragged.range(available).flat_values  # each span's place in its example's ranking

    def best(k):
        keep = tf.where(rank < k)[:, 0]
        chosen = {name: tf.gather(v, keep) for name, v in ranked.items()}
        text, start_char, end_char = span_texts(tokenizer, vocabulary, paragraphs, chosen["example"],
                                                chosen["start"], chosen["end"])
        return {**chosen, "text": text, "start_char": start_char, "end_char": end_char}

    def too_few(k):
        chosen = best(k)
        distinct = _distinct_texts(chosen["example"], chosen["text"], num_texts)
        return tf.reduce_any((distinct < n_best_size) & (available > k))

    k = tf.while_loop(too_few, lambda k: [k * 2], [tf.constant(4 * n_best_size, tf.int64)])[0]
    chosen = best(k)
    return {name: chosen[name] for name in ("example", "text", "start_logit", "end_logit", "start_char", "end_char",
                                            "score")}


def _nbest_lists(entries, null, num_texts, n_best_size):
    """Each example's n-best list (ragged `[B, (entries)]` per field, with its `probability`), as
    `example_prediction` makes it from its candidates `entries` (`[C]` per field, `example` the
    example of each, v2.0's null answers among them) and `null` (v2.0: the null answers, one per
    example; else None): best score first, creation order among equals; the first n_best_size
    distinct texts; v2.0's null answer added to a list of spans alone; the "empty" nonce where
    nothing (v2.0: no span) is left; probabilities the softmax of start + end logits."""
    order = _ranked(entries["example"], entries["score"])
    entries = {k: tf.gather(v, order) for k, v in entries.items()}
    key = tf.strings.join([tf.strings.as_string(entries["example"]), entries["text"]], separator="\x1f")
    _, same = tf.unique(key)
    place = tf.range(tf.size(key, out_type=tf.int64))
    distinct = tf.equal(place, tf.gather(tf.math.unsorted_segment_min(place, same, tf.size(key, out_type=tf.int64)),
                                         same))
    rank = tf.ragged.range(tf.math.bincount(tf.cast(tf.boolean_mask(entries["example"], distinct), tf.int32),
                                            minlength=tf.cast(num_texts, tf.int32), dtype=tf.int64)).flat_values
    kept = tf.boolean_mask(tf.boolean_mask(place, distinct), rank < n_best_size)
    names = ("text", "start_logit", "end_logit", "start_char", "end_char", "null", "score")
    nbest = _rows({k: tf.gather(entries[k], kept) for k in names}, tf.gather(entries["example"], kept), num_texts)
    none = tf.equal(nbest["text"].row_lengths(), 0)
    if null is not None:  # the null answer joins a list of spans alone
        nbest = _append(nbest, {k: null[k] for k in names}, ~tf.reduce_any(nbest["null"], axis=1))
        none |= ~tf.reduce_any(tf.not_equal(nbest["text"], ""), axis=1)
    zero32, minus_one = tf.zeros([num_texts]), -tf.ones([num_texts], tf.int64)
    nbest = _append(nbest, {"text": tf.fill([num_texts], NO_ANSWER), "start_logit": zero32, "end_logit": zero32,
                            "start_char": minus_one, "end_char": minus_one, "null": tf.zeros([num_texts], tf.bool),
                            "score": tf.zeros([num_texts], tf.float64)}, none)
    # compute_softmax over each list, in float64 as the original's Python floats.
    total = tf.cast(nbest["start_logit"], tf.float64) + tf.cast(nbest["end_logit"], tf.float64)
    exps = tf.exp(total - tf.reduce_max(total, axis=1, keepdims=True))
    return {**nbest, "probability": exps / tf.reduce_sum(exps, axis=1, keepdims=True)}


def _chosen(nbest, score_null, null_score_diff_threshold):
    """Each example's answer from its n-best list: the first entry (v2.0: the first with a text,
    unless `score_null` (float64 `[B]`; None for v1.1) less its score passes the threshold)."""
    first = lambda mask: tf.argmax(tf.cast(mask, tf.int32).to_tensor(0), axis=1, output_type=tf.int64)  # noqa: E731
    pick = lambda ragged, index: tf.gather(ragged.to_tensor(), index[:, None], batch_dims=1)[:, 0]  # noqa: E731
    best = first(tf.not_equal(nbest["text"], "") if score_null is not None else tf.ones_like(nbest["null"]))
    out = {"answer": pick(nbest["text"], best), "start_char": pick(nbest["start_char"], best),
           "end_char": pick(nbest["end_char"], best), "score": tf.cast(pick(nbest["probability"], best), tf.float32)}
    if score_null is None:
        return out
    # score_null - start - end, in that order, as the original's Python floats.
    score_diff = (score_null - tf.cast(pick(nbest["start_logit"], best), tf.float64)
                  - tf.cast(pick(nbest["end_logit"], best), tf.float64))
    null_wins = score_diff > null_score_diff_threshold
    minus_one = -tf.ones_like(out["start_char"])
    return {
        "answer": tf.where(null_wins, "", out["answer"]),
        "start_char": tf.where(null_wins, minus_one, out["start_char"]),
        "end_char": tf.where(null_wins, minus_one, out["end_char"]),
        "score": tf.where(null_wins, tf.cast(pick(nbest["probability"], first(nbest["null"])), tf.float32),
                          out["score"]),
        "null_score_diff": tf.cast(score_diff, tf.float32),
    }


def answer_examples(tokenizer, packer, run_model, vocabulary, question, context, max_query_length, doc_stride,
                    n_best_size=20, max_answer_length=30, version_2_with_negative=False,
                    null_score_diff_threshold=0.0, first_window=False):
    """run_squad.py's prediction of each (question, context), in graph.

    Args:
        tokenizer: A `bert_tf.preprocessing.BertTokenizer`.
        packer: A `BertPackInputs`; its `seq_length` is the feature's.
        run_model: `f(inputs) -> {"start_logits", "end_logits"}` (`[W, L]`, L at most seq_length).
        vocabulary: string `[vocab]`, the tokens by id.
        question, context: string `[B]`.
        max_query_length, doc_stride: run_squad.py's settings of its features.
        n_best_size, max_answer_length, version_2_with_negative, null_score_diff_threshold:
            run_squad.py's settings of its predictions (its flag defaults by default).
        first_window: Whether to add each example's first window's own outputs (`[B, L]`): its
            `start_logits`, `end_logits`, `tokens` (the WordPieces, "" on padding) and
            `input_type_ids`.

    Returns:
        A dict: `answer` (string `[B]`; v2.0: "" when the null answer wins), `start_char` and
        `end_char` (int64 `[B]`: the answer's characters in the context, end exclusive; -1 for an
        answer that is no span), `score` (float32 `[B]`: the answer's n-best probability),
        `null_score_diff` (float32 `[B]`, v2.0 only), and the n-best list, padded: `nbest_text`,
        `nbest_probability`, `nbest_start_logit`, `nbest_end_logit`, `nbest_start_char`,
        `nbest_end_char` (`[B, N]`) and `nbest_size` (int32 `[B]`).
    """
    num_texts = tf.size(question, out_type=tf.int64)
    query = tokenizer(question)[:, :max_query_length]  # [B, (Q)]
    paragraphs = Paragraphs(tokenizer, context)
    query_length = tf.cast(query.row_lengths(), tf.int64)
    pieces = tf.cast(paragraphs.pieces.row_lengths(), tf.int64)
    text, start, span_length, count = doc_spans(pieces, packer.seq_length - 3 - query_length, doc_stride)
    inputs = packer([tf.gather(query, text), take_rows(paragraphs.pieces, text, start, span_length)])
    outputs = run_model(inputs)
    logits = tuple(tf.cast(outputs[name], tf.float32) for name in ("start_logits", "end_logits"))  # [W, L]
    real = inputs["input_mask"][:, :tf.shape(logits[0])[1]] > 0
    piece_starts = tf.cast(paragraphs.pieces.row_starts(), tf.int64)
    spans = Spans(logits, real, text, start, span_length, query_length, n_best_size, max_answer_length,
                  piece_starts, tf.reduce_sum(pieces))
    fields = _best_spans_with_texts(tokenizer, vocabulary, paragraphs, spans, num_texts, n_best_size)
    entries = {**fields, "null": tf.zeros_like(fields["example"], tf.bool)}
    null = None
    if version_2_with_negative:  # the null answer competes, after every span of its score
        score_null, null_start, null_end = _null_answers(logits, text, span_length, num_texts)
        minus_one = -tf.ones([num_texts], tf.int64)
        null = {"text": tf.fill([num_texts], ""), "start_logit": null_start, "end_logit": null_end,
                "start_char": minus_one, "end_char": minus_one, "score": score_null,
                "null": tf.ones([num_texts], tf.bool), "example": tf.range(num_texts)}
        entries = {k: tf.concat([entries[k], null[k]], 0) for k in entries}
    nbest = _nbest_lists(entries, null, num_texts, n_best_size)
    out = _chosen(nbest, score_null if version_2_with_negative else None, null_score_diff_threshold)
    width = n_best_size + (1 if version_2_with_negative else 0)
    dense = lambda ragged, fill: ragged.to_tensor(fill, shape=[None, width])  # noqa: E731
    out.update(nbest_text=dense(nbest["text"], ""),
               nbest_probability=tf.cast(dense(nbest["probability"], 0.0), tf.float32),
               nbest_start_logit=dense(nbest["start_logit"], 0.0), nbest_end_logit=dense(nbest["end_logit"], 0.0),
               nbest_start_char=dense(nbest["start_char"], -1), nbest_end_char=dense(nbest["end_char"], -1),
               nbest_size=tf.cast(nbest["text"].row_lengths(), tf.int32))
    if first_window:
        rows = tf.cumsum(count, exclusive=True)  # every example has a window
        length = tf.shape(logits[0])[1]
        cut = {name: tf.gather(inputs[name], rows)[:, :length] for name in inputs}
        out.update(start_logits=tf.gather(logits[0], rows), end_logits=tf.gather(logits[1], rows),
                   tokens=tf.where(cut["input_mask"] > 0, tf.gather(vocabulary, cut["input_word_ids"]), ""),
                   input_type_ids=cut["input_type_ids"])
    return out
