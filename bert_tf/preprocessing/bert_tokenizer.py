"""In-graph WordPiece tokenization with exactly the original rules (TensorFlow + tensorflow-text).

`BertBasicTokenizer` restates the original BasicTokenizer; tensorflow-text's FastWordpiece does
the greedy longest-match-first WordPiece step, with the original's 200-character word limit
(tensorflow-text counts bytes) applied here.

Printable ASCII lines (most of English text), lower-cased, go to FastWordpiece's end-to-end
mode, which splits and tokenizes in one C++ pass (1.6x faster than splitting, then WordPiece, on
English prose). On such lines its splitting is the original's: at " \\t\\n\\r" (the only
whitespace they have), around every non-alphanumeric printable byte (its ASCII punctuation
ranges are BERT's); a byte is a character, so its max_bytes_per_word is the 200-character limit;
and the vocab tokens its trie leaves out (with punctuation inside) no word of the original can
match, nor can tokens with whitespace inside, which are left out here. Beyond ASCII it uses
ICU's Unicode tables, so the other lines take the word road.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf import tokenization
from bert_tf.preprocessing.bert_basic_tokenizer import BertBasicTokenizer

# The original replaces a word longer than this (in characters) by [UNK].
MAX_INPUT_CHARS_PER_WORD = 200


def _merge_rows(rows_a, a, rows_b, b):
    """Two int32 ragged row sets `[n_*, (ids)]` of one batch back in batch order."""
    values = tf.concat([a.flat_values, b.flat_values], axis=0)
    splits = tf.concat([a.row_splits, b.row_splits[1:] + a.row_splits[-1]], axis=0)
    order = tf.math.invert_permutation(tf.concat([rows_a, rows_b], axis=0))
    (splits,), values = tf.raw_ops.RaggedGather(
        params_nested_splits=[splits], params_dense_values=values, indices=order, OUTPUT_RAGGED_RANK=1
    )
    return tf.RaggedTensor.from_row_splits(values, splits, validate=False)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizer(keras.layers.Layer):
    """WordPiece tokenization as a Keras layer: string tensor `[batch]` -> ids.

    Called on a string tensor `[batch]`, it returns an int32 `tf.RaggedTensor [batch, (wordpieces)]`
    of vocab ids: exactly `bert_tf.tokenization.FullTokenizer(vocab_file, do_lower_case)`'s ids on every
    input (same Python, same Unicode database). Invalid UTF-8 is replaced, never an error.

    In tf.data, map it over batches of lines, in parallel, e.g.
    `lines.batch(1024).map(tokenizer, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)`
    (or a function calling it and `BertPackInputs`): a call per line costs far more. Its graph is
    small (see bert_basic_tokenizer), so a new iterator instantiates it in ~20-40 ms of CPU.

    Args:
        vocabulary: A vocab.txt path or a list of tokens (id = position).
        do_lower_case: Whether to lower-case, NFD-normalise and strip accents, as the original's
            uncased models.
        never_split: Tokens (e.g. "[CLS]", "[SEP]", "[MASK]") that stay whole when they appear as
            whitespace-separated words in the text. None (the default): none, as the original.
        **kwargs: Keras layer arguments (`name`, ...).

    Raises:
        FileNotFoundError: `vocabulary` is a path that is not a file.
        ValueError: The vocab is empty, holds a token twice or has no "[UNK]".
    """

    def __init__(self, vocabulary, do_lower_case=True, never_split=None, **kwargs):
        super().__init__(**kwargs)
        # Strings in, ragged ints out: no Keras dtype conversion of the inputs.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if isinstance(vocabulary, str):
            vocab = tokenization.load_vocab(vocabulary)
            source = vocabulary
        else:
            source = "<vocabulary>"
            vocab = tokenization.vocab_from_tokens(list(vocabulary), source)
        tokenization.check_vocab(vocab, source)
        self.vocabulary = list(vocab)
        self.do_lower_case = bool(do_lower_case)
        self.never_split = list(never_split or [])
        self.basic_tokenizer = BertBasicTokenizer(
            do_lower_case=self.do_lower_case, never_split=self.never_split, name="basic_tokenizer"
        )
        # FastWordpiece cannot take "" entries (blank vocab lines); a token that can never match
        # a word (nor, end to end, span whitespace) may be any unmatchable placeholder instead.
        def placeholder(i, token, end_to_end):
            unmatchable = not token or (end_to_end and len(token.split()) != 1)
            return f"\U000f0000{i}\U000f0000" if unmatchable else token

        def fast_wordpiece(end_to_end):
            return tf_text.FastWordpieceTokenizer(
                vocab=[placeholder(i, t, end_to_end) for i, t in enumerate(self.vocabulary)],
                suffix_indicator="##",
                # Words: the limit below is the original's, in characters. ASCII text: bytes.
                max_bytes_per_word=MAX_INPUT_CHARS_PER_WORD if end_to_end else 1 << 30,
                token_out_type=tf.int64,
                unknown_token="[UNK]",
                no_pretokenization=not end_to_end,
            )

        self._wordpiece = fast_wordpiece(end_to_end=False)
        self._ascii_wordpiece = fast_wordpiece(end_to_end=True)
        # A word longer than the limit becomes this one character, which no vocab token starts
        # with, so WordPiece turns it into a single [UNK], as the original does.
        first_chars = {t[0] for t in self.vocabulary if t} | {
            t[2] for t in self.vocabulary if t.startswith("##") and len(t) > 2
        }
        self._unk_word = next(chr(cp) for cp in range(0xF0001, 0xFFFFD) if chr(cp) not in first_chars)
        self.built = True

    def basic_tokenize(self, text):
        """The words WordPiece sees (`BasicTokenizer.tokenize`'s output).

        Args:
            text: A string tensor `[batch]`.

        Returns:
            A string `tf.RaggedTensor [batch, (words)]`.
        """
        return self.basic_tokenizer(text)

    def call(self, inputs):
        text = tf.convert_to_tensor(inputs, tf.string)
        if self.never_split:  # special words are found among words: no end-to-end road
            return self.wordpiece(self.basic_tokenizer(text))
        ascii_rows, ascii_lines, other_rows, other_lines = self.basic_tokenizer.clean_lines(text)
        ascii_ids = self._ascii_wordpiece.tokenize(ascii_lines)  # [ascii rows, (pieces)]
        other_ids = self.wordpiece(self.basic_tokenizer.split_words(other_lines))
        return _merge_rows(ascii_rows, tf.cast(ascii_ids, tf.int32), other_rows, other_ids)

    def wordpiece(self, words):
        """Splits basic-tokenized words into WordPiece ids.

        A word of over 200 characters becomes a single [UNK], as in the original.

        Args:
            words: A string `tf.RaggedTensor [batch, (words)]` (as `basic_tokenize` gives).

        Returns:
            An int32 `tf.RaggedTensor [batch, (wordpieces)]` of the words' pieces, row by row.
        """
        flat = words.flat_values
        # Only a word of over 200 bytes can have over 200 characters.
        long = tf.where(tf.strings.length(flat) > MAX_INPUT_CHARS_PER_WORD)  # [n, 1]
        chars = tf.strings.length(tf.gather_nd(flat, long), unit="UTF8_CHAR")
        too_long = tf.gather(long, tf.where(chars > MAX_INPUT_CHARS_PER_WORD)[:, 0])
        flat = tf.tensor_scatter_nd_update(flat, too_long, tf.fill(tf.shape(too_long)[:1], self._unk_word))
        pieces = self._wordpiece.tokenize(flat)
        splits = tf.gather(pieces.row_splits, words.row_splits)  # [words + 1] -> [batch + 1]
        return tf.RaggedTensor.from_row_splits(tf.cast(pieces.flat_values, tf.int32), splits, validate=False)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((inputs.shape[0], None), dtype="int32", ragged=True)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary=self.vocabulary,
            do_lower_case=self.do_lower_case,
            never_split=self.never_split,
        )
        return config
