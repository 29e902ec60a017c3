"""The original BasicTokenizer in graph: cleaning, CJK, lower-casing + NFD + accent stripping,
whitespace and punctuation splitting (TensorFlow ops only).

tensorflow-text's BERT normalisation differs from the original release (ICU NFKC_Casefold
instead of str.lower, RE2's ASCII \\s, no removal of control characters, ...). This layer
restates the original rules with tables built from Python's own `unicodedata`
(`unicode_tables`), so it agrees with `bert_tf.tokenization.BasicTokenizer` exactly.

The rules work on whole lines: each line becomes its tokens with spaces between them, then
one split at whitespace. Printable ASCII lines, most of an English corpus, with byte ops:
ASCII lower-casing, spaces around punctuation bytes. Other lines over code
points, with one ragged table lookup (`unicode_tables.clean_map`: cleaning, lower-casing, NFD,
accent stripping and the spaces around punctuation and CJK, character by character), the
final-sigma context, and on the rare lines with a spacing combining mark NFD's canonical
ordering before marks are stripped. The original lower-cases word by word, after the CJK split
and before the punctuation split; per line the same characters come out because whitespace and
CJK ideographs end the final-sigma search and NFD's reordering as a word boundary does
(`clean_map` checks this when it builds the tables).

The graph has no control flow and stays small: every road runs on the lines it owns, possibly
none. A tf.data map instantiates its function anew for every iterator (every epoch), at ~0.1 ms
of CPU per graph node (two thirds of it grappler); the former choice of roads per batch (tf.case,
with the code point road in two branches: 1,566 nodes with BertTokenizer) took 0.37 s per
iterator, which halved tf.data's throughput on 3 MB (5 vs 12 MB/s). Now BertTokenizer has ~230
nodes and a new iterator costs ~35 ms (uncased; cased ~100 nodes, ~18 ms).
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.preprocessing import unicode_tables as tables

# The original's rules on printable ASCII (and \t \n \r): _is_punctuation holds for every
# printable byte that is neither a letter nor a digit; lower-casing is ASCII's; accent
# stripping, CJK and _clean_text do nothing. Lines with other control bytes (rare) are not
# ASCII lines here: the code point road drops those.
_ASCII_LINE = "[\\t\\n\\r\\x20-\\x7e]*"
_ASCII_PUNCTUATION = "([!-/:-@\\[-`{-~])"
_PLACEHOLDER = "x"  # stands in for a never_split word: one token, the same lower-cased


def _where(mask):
    """int32 positions where `mask` holds."""
    return tf.cast(tf.reshape(tf.where(mask), [-1]), tf.int32)


def _decode(lines):
    """(code points, int32 line splits); invalid UTF-8 becomes U+FFFD, which the tables drop."""
    splits, values = tf.raw_ops.UnicodeDecode(
        input=lines, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD, Tsplits=tf.int32
    )
    return values, splits


def _encode(values, splits):
    return tf.raw_ops.UnicodeEncode(
        input_values=values, input_splits=splits, output_encoding="UTF-8", errors="replace"
    )


def _table(splits, values):
    """A ragged table (`unicode_tables.clean_map`) as constants: each row's [start, limit) in
    values, and values."""
    return tf.constant(np.stack([splits[:-1], splits[1:]], axis=1)), tf.constant(values)


def _lookup(table, values, splits):
    """Every code point replaced by its row of `table`. (A RaggedRange over the rows' bounds,
    not a RaggedGather, which checks all 1.1M row splits on every call: 0.3 ms a batch.)"""
    starts, limits = tf.unstack(tf.gather(table[0], values), axis=1)
    rows, positions = tf.raw_ops.RaggedRange(starts=starts, limits=limits, deltas=1, Tsplits=tf.int32)
    return tf.gather(table[1], positions), tf.gather(rows, splits)


def _select(keep, values, splits):
    kept = tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int32))], axis=0)
    return tf.gather(values, _where(keep)), tf.gather(kept, splits)


def _search(sorted_values, values, side="left", out_type=tf.int32):
    """tf.searchsorted of 1-D tensors, without its reshapes (nodes cost time in every new tf.data
    iterator)."""
    search = tf.raw_ops.LowerBound if side == "left" else tf.raw_ops.UpperBound
    row = [1, -1]
    found = search(sorted_inputs=tf.reshape(sorted_values, row), values=tf.reshape(values, row), out_type=out_type)
    return tf.reshape(found, [-1])


def _split(lines):
    """Lines -> (words `[n]`, int64 row splits `[len(lines) + 1]`) at " \\t\\n\\r"."""
    indices, words, _ = tf.raw_ops.StringSplitV2(input=lines, sep="")
    rows = tf.range(tf.size(lines, out_type=tf.int64) + 1)
    return words, _search(indices[:, 0], rows, out_type=tf.int64)


def _stitch(rows_a, a, rows_b, b):
    """Two row sets of one batch back in batch order (`rows_*`: int32 `[n_*]`)."""
    return tf.dynamic_stitch([rows_a, rows_b], [a, b])


@keras.saving.register_keras_serializable(package="bert_tf")
class BertBasicTokenizer(keras.layers.Layer):
    """The original BasicTokenizer as a Keras layer: string tensor `[batch]` -> words.

    Called on a string tensor `[batch]`, it returns a string `tf.RaggedTensor [batch, (words)]` of
    UTF-8 words: exactly `bert_tf.tokenization.BasicTokenizer(do_lower_case, never_split).tokenize`
    on each string. Invalid UTF-8 is replaced (and then dropped, as U+FFFD is), never an error.

    Args:
        do_lower_case: Whether to lower-case, NFD-normalise and strip accents, as the original's
            uncased models.
        never_split: Words (e.g. "[CLS]", "[MASK]") kept whole, neither lower-cased nor split,
            when they stand between whitespace in the text. None (the default): none, as in the
            original.
        **kwargs: Keras layer arguments (`name`, ...).
    """

    def __init__(self, do_lower_case=True, never_split=None, **kwargs):
        super().__init__(**kwargs)
        # Strings in, ragged strings out: no Keras dtype conversion of the inputs.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.do_lower_case = bool(do_lower_case)
        self.never_split = list(never_split or [])
        flags = tables.flags()
        if self.do_lower_case:
            self._flags = tf.constant(flags)
            self._ccc = tf.constant(tables.combining_classes())
            self._stripped_map = _table(*tables.clean_map(True, strip_marks=True))
            self._nfd_map = _table(*tables.clean_map(True, strip_marks=False))
        else:
            self._cased_map = _table(*tables.clean_map(False))
        self._never_split_table = None
        if self.never_split:
            # Words as the original looks them up: cleaned, CJK spaced out, not lower-cased.
            self._words_map = _table(*tables.clean_map(False, space_punctuation=False))
            self._never_split_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(self.never_split), tf.ones(len(self.never_split), tf.int32)
                ),
                default_value=0,
            )
        self.built = True

    def call(self, inputs):
        text = tf.convert_to_tensor(inputs, tf.string)
        return self._with_never_split(text) if self.never_split else self._words(text)

    def tokens_and_lengths(self, text):
        """The words (as in `call`) and their lengths in characters.

        Args:
            text: A string tensor `[batch]`.

        Returns:
            `(words, lengths)`: a string `tf.RaggedTensor [batch, (words)]` and the int64 lengths
            of its words in UTF-8 characters, of the same shape.
        """
        words = self.call(text)
        lengths = tf.strings.length(words.flat_values, unit="UTF8_CHAR")
        return words, words.with_flat_values(tf.cast(lengths, tf.int64))

    def clean_lines(self, text):
        """Each line of `text` made ready to split into words, by the road that suits it.

        Printable ASCII lines are lower-cased (with `do_lower_case`) but not yet spaced out; the
        other lines are cleaned (and lower-cased, NFD-normalised and stripped of accents with
        `do_lower_case`) with every token already between spaces.

        Args:
            text: A string tensor `[batch]`.

        Returns:
            `(ascii_rows, ascii_lines, other_rows, other_lines)`: the int32 positions in `text` of
            the printable ASCII lines, those lines (string `[n_ascii]`), the positions of the
            other lines, and those lines cleaned (string `[n_other]`).
        """
        ascii_rows, ascii_lines, other_rows, other = self._partition(text)
        if not self.do_lower_case:
            return ascii_rows, ascii_lines, other_rows, _encode(*_lookup(self._cased_map, *_decode(other)))
        # A space at both ends of each line (no change to its words): in the arrays of code points
        # of all lines, each line then starts a run of NFD's reordering and ends the final-sigma
        # search as a word does.
        values, splits = _decode(tf.strings.join([" ", other, " "]))
        flags = tf.gather(self._flags, values)
        values = self._final_sigma(values, flags)
        other_lines = _encode(*_lookup(self._stripped_map, values, splits))
        # Per character NFD with Mn stripped is right unless a spacing mark with a combining
        # class can move past another one; the (rare) lines with one are done again, in full.
        marks = _where(tf.not_equal(flags & tables.REORDER, 0))
        ordered, _ = tf.unique(_search(splits, marks, side="right") - 1)
        (splits,), values = tf.raw_ops.RaggedGather(
            params_nested_splits=[splits], params_dense_values=values, indices=ordered, OUTPUT_RAGGED_RANK=1
        )
        ordered_lines = self._order_strip(values, splits)
        other_lines = tf.tensor_scatter_nd_update(other_lines, tf.expand_dims(ordered, 1), ordered_lines)
        return ascii_rows, tf.strings.lower(ascii_lines), other_rows, other_lines

    @staticmethod
    def split_words(lines):
        """Splits spaced-out lines into their words, at " \\t\\n\\r".

        Args:
            lines: A string tensor `[n]` of lines whose tokens stand between whitespace.

        Returns:
            A string `tf.RaggedTensor [n, (words)]`.
        """
        words, splits = _split(lines)
        return tf.RaggedTensor.from_row_splits(words, splits, validate=False)

    def _words(self, text):
        ascii_rows, ascii_lines, other_rows, other_lines = self.clean_lines(text)
        ascii_lines = tf.strings.regex_replace(ascii_lines, _ASCII_PUNCTUATION, r" \1 ")
        return self.split_words(_stitch(ascii_rows, ascii_lines, other_rows, other_lines))

    @staticmethod
    def _partition(text):
        """(ascii_rows, ASCII lines, other_rows, other lines)."""
        is_ascii = tf.strings.regex_full_match(text, _ASCII_LINE)
        ascii_rows, other_rows = _where(is_ascii), _where(~is_ascii)
        return ascii_rows, tf.gather(text, ascii_rows), other_rows, tf.gather(text, other_rows)

    def _order_strip(self, values, splits):
        """Lower-cased code points -> lines, with NFD's canonical ordering (a stable sort of each
        run of non-starters by combining class) before Mn are removed."""
        values, splits = _lookup(self._nfd_map, values, splits)
        ccc = tf.cast(tf.gather(self._ccc, values), tf.int64)
        runs = tf.cumsum(tf.cast(tf.equal(ccc, 0), tf.int64))
        # Unique keys in (run, class, position) order: any sort of them is the stable sort
        # (int64 holds them up to ~10^8 code points on this road in one batch).
        n = tf.size(values, out_type=tf.int64)
        order = tf.math.top_k(-((runs * 256 + ccc) * n + tf.range(n)), k=tf.cast(n, tf.int32)).indices
        values = tf.gather(values, order)
        keep = tf.equal(tf.gather(self._flags, values) & tables.MN, 0)
        return _encode(*_select(keep, values, splits))

    def _final_sigma(self, values, flags):
        """Σ made ς where str.lower would: the previous non-case-ignorable character of the word
        is cased and the next one (if any) is not. Characters _clean_text drops count as absent;
        whitespace (as at both ends of every line) and CJK ideographs stop the search (neither
        cased nor case-ignorable), so searching along the lines finds what a search in the word
        finds."""
        sigma = _where(tf.equal(values, tables.CAPITAL_SIGMA))
        anchors = _where(tf.equal(flags & (tables.SIGMA_IGNORABLE | tables.DROP), 0))
        at = _search(anchors, sigma)  # anchors[at] is the Σ itself, never the first or last

        def cased(anchor):
            return tf.not_equal(tf.gather(flags, tf.gather(anchors, anchor)) & tables.SIGMA_CASED, 0)

        final = cased(at - 1) & ~cased(at + 1)
        return tf.tensor_scatter_nd_update(
            values, tf.expand_dims(sigma, 1), tf.where(final, tables.FINAL_SIGMA, tables.CAPITAL_SIGMA)
        )

    def _with_never_split(self, text):
        """never_split words are whole whitespace-separated words of the cleaned text (after the
        CJK split, before lower-casing): split into words first, then treat each word as a line."""
        ascii_rows, ascii_lines, other_rows, other = self._partition(text)
        other = _encode(*_lookup(self._words_map, *_decode(other)))
        words, word_splits = _split(_stitch(ascii_rows, ascii_lines, other_rows, other))
        special = _where(tf.not_equal(self._never_split_table.lookup(words), 0))
        special_words = tf.gather(words, special)
        # A special word goes through as one plain token, which it then replaces.
        words = tf.tensor_scatter_nd_update(words, special[:, None], tf.fill(tf.shape(special), _PLACEHOLDER))
        tokens = self._words(words)
        at = tf.gather(tokens.row_splits, special)[:, None]
        splits = tf.gather(tokens.row_splits, word_splits)
        tokens = tf.tensor_scatter_nd_update(tokens.flat_values, at, special_words)
        return tf.RaggedTensor.from_row_splits(tokens, splits, validate=False)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((inputs.shape[0], None), dtype="string", ragged=True)

    def get_config(self):
        config = super().get_config()
        config.update(do_lower_case=self.do_lower_case, never_split=self.never_split)
        return config
