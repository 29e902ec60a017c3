"""In-graph WordPiece tokenization with exactly the original rules (TensorFlow + tensorflow-text).

`BertBasicTokenizer` restates the original BasicTokenizer; tensorflow-text's FastWordpiece does
the greedy longest-match-first WordPiece step, with the original's 200-character word limit
(tensorflow-text counts bytes) applied here.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf import tokenization
from bert_tf.preprocessing.bert_basic_tokenizer import BertBasicTokenizer

# The original replaces a word longer than this (in characters) by [UNK].
MAX_INPUT_CHARS_PER_WORD = 200


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenizer(keras.layers.Layer):
    """String tensor `[batch]` -> int32 `tf.RaggedTensor [batch, (wordpieces)]` of vocab ids.

    Gives exactly `bert_tf.tokenization.FullTokenizer(vocab_file, do_lower_case)`'s ids on every
    input (same Python, same Unicode database). Invalid UTF-8 is replaced, never an error.

    Arguments:
        vocabulary: a vocab.txt path or a list of tokens (id = position).
        do_lower_case: lower-case, NFD and strip accents, as the original's uncased models.
        never_split: tokens (e.g. "[CLS]", "[SEP]", "[MASK]") that stay whole when they appear as
            whitespace-separated words in the text. Default: none, as the original.
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
        # FastWordpiece cannot take "" entries (blank vocab lines); they can never match a
        # non-empty word, so any unmatchable placeholder keeps the ids.
        wordpiece_vocab = [t if t else f"\U000f0000{i}\U000f0000" for i, t in enumerate(self.vocabulary)]
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=wordpiece_vocab,
            suffix_indicator="##",
            max_bytes_per_word=1 << 30,  # the limit below is the original's, in characters
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            no_pretokenization=True,
        )
        # A word longer than the limit becomes this one character, which no vocab token starts
        # with, so WordPiece turns it into a single [UNK], as the original does.
        first_chars = {t[0] for t in self.vocabulary if t} | {
            t[2] for t in self.vocabulary if t.startswith("##") and len(t) > 2
        }
        self._unk_word = next(chr(cp) for cp in range(0xF0001, 0xFFFFD) if chr(cp) not in first_chars)
        self.built = True

    def basic_tokenize(self, text):
        """The words WordPiece sees, `[batch, (words)]` (`BasicTokenizer.tokenize`'s output)."""
        return self.basic_tokenizer(text)

    def call(self, inputs):
        tokens, lengths = self.basic_tokenizer.tokens_and_lengths(inputs)
        too_long = lengths.flat_values > MAX_INPUT_CHARS_PER_WORD
        words = tokens.with_flat_values(tf.where(too_long, self._unk_word, tokens.flat_values))
        pieces = self._wordpiece.tokenize(words)  # [batch, (words), (pieces)]
        return tf.cast(pieces.merge_dims(1, 2), tf.int32)

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
