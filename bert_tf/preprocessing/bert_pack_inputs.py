"""Packing one or two segments of WordPiece ids into BERT's fixed-length inputs, in graph."""

import keras
import tensorflow as tf

from bert_tf.errors import shown


def longest_first_lengths(len_a, len_b, budget):
    """Lengths after the original's `_truncate_seq_pair(a, b, budget)`, in closed form.

    The original pops one token at a time from the longer segment (from B on ties) until the
    pair fits: a short segment keeps everything, two long ones end at ceil/floor of half the
    budget, A taking the odd token.
    """
    half_up = (budget + 1) // 2
    new_a = tf.minimum(len_a, tf.maximum(budget - len_b, half_up))
    new_b = tf.minimum(len_b, budget - new_a)
    return new_a, new_b


def _gather_rows(segment, offset):
    """int64 `[batch, seq]`: `segment[row, offset]` where the offset is in the row; where it is
    not, some value of the segment (or 0), which the caller replaces."""
    values = tf.concat([tf.cast(segment.flat_values, tf.int64), tf.zeros([1], tf.int64)], 0)
    index = tf.cast(segment.row_starts(), tf.int64)[:, None] + offset
    return tf.gather(values, tf.clip_by_value(index, 0, tf.size(values, out_type=tf.int64) - 1))


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPackInputs(keras.layers.Layer):
    """Packs one or two segments of ids as [CLS] A [SEP] (B [SEP]), truncated and padded.

    Truncation is the original's fine-tuning scripts': one segment keeps its first seq_length - 2
    ids; a pair is cut to seq_length - 3 by removing ids from the end of the longer segment first
    (B on ties). A row whose B is empty is packed as a single segment, as the original does for an
    example without text_b tokens.

    Call with one int `tf.RaggedTensor [batch, (ids)]` or a list of two, and optionally
    `seq_length=` (an int or an int32 scalar tensor, at least 3) for another length than the
    layer's, as TF Hub's `bert_pack_inputs(segments, seq_length=N)`. It returns a dict of int32
    `[batch, seq_length]` tensors: `input_word_ids` (padded with `padding_id`), `input_mask`
    (1 for real tokens) and `input_type_ids` (0 for [CLS] A [SEP], 1 for B [SEP]).

    Args:
        seq_length: The packed length, at least 3.
        start_of_sequence_id: The id of [CLS].
        end_of_segment_id: The id of [SEP].
        padding_id: The id the padding positions of `input_word_ids` take.
        **kwargs: Keras layer arguments (`name`, ...).

    Raises:
        ValueError: `seq_length` is under 3.
    """

    def __init__(self, seq_length, start_of_sequence_id, end_of_segment_id, padding_id=0, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.check_seq_length(seq_length)
        self.seq_length = seq_length
        self.start_of_sequence_id = start_of_sequence_id
        self.end_of_segment_id = end_of_segment_id
        self.padding_id = padding_id
        self.built = True

    @staticmethod
    def check_seq_length(seq_length):
        """Checks that `seq_length` holds one text: [CLS] A [SEP] needs 3 positions.

        Args:
            seq_length: The packed length.

        Raises:
            ValueError: `seq_length` is under 3.
        """
        if seq_length < 3:
            raise ValueError(f"{shown.seq_length} {seq_length} leaves no room for a text: [CLS] A [SEP] needs 3 "
                             f"positions")

    @classmethod
    def from_vocabulary(cls, vocabulary, seq_length, **kwargs):
        """Makes the layer with the [CLS]/[SEP]/[PAD] ids of a vocab.

        Args:
            vocabulary: A vocab: a dict (token -> id) or a list of tokens (id = position).
            seq_length: The packed length, at least 3.
            **kwargs: The layer's other arguments (Keras layer arguments).

        Returns:
            The `BertPackInputs`; its `padding_id` is [PAD]'s id, or 0 when the vocab has none.

        Raises:
            ValueError: The vocab has no [CLS] or [SEP], or `seq_length` is under 3.
        """
        vocab = vocabulary if isinstance(vocabulary, dict) else {t: i for i, t in enumerate(vocabulary)}
        missing = [t for t in ("[CLS]", "[SEP]") if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary has no {' or '.join(missing)}")
        return cls(seq_length, vocab["[CLS]"], vocab["[SEP]"], vocab.get("[PAD]", 0), **kwargs)

    def call(self, inputs, seq_length=None):
        seq_length = self.seq_length if seq_length is None else seq_length
        if not isinstance(seq_length, int):  # a tensor: in the int64 of the row lengths
            seq_length = tf.cast(seq_length, tf.int64)
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"BertPackInputs takes one or two segments, got {len(segments)}")
        # Every output position is read from the flat ids by index arithmetic on the kept lengths:
        # a few dozen dense ops, where ragged truncation and combining build thousands (slow to
        # trace, and to start in every tf.data map and export).
        len_a = tf.cast(segments[0].row_lengths(), tf.int64)
        new_a = tf.minimum(len_a, seq_length - 2)
        new_b = tf.zeros_like(new_a)  # B's kept ids; 0 packs the row as a single segment
        if len(segments) == 2:
            len_b = tf.cast(segments[1].row_lengths(), tf.int64)
            pair_a, pair_b = longest_first_lengths(len_a, len_b, seq_length - 3)
            # The original packs an example whose B has no tokens as a single segment.
            new_a = tf.where(tf.equal(len_b, 0), new_a, pair_a)
            new_b = pair_b
        position = tf.range(tf.cast(seq_length, tf.int64), dtype=tf.int64)[None, :]
        new_a, new_b = new_a[:, None], new_b[:, None]
        start_b = new_a + 2
        in_b = (position >= start_b) & (position < start_b + new_b)
        sep = tf.equal(position, new_a + 1) | ((new_b > 0) & tf.equal(position, start_b + new_b))
        word_ids = _gather_rows(segments[0], position - 1)
        if len(segments) == 2:
            word_ids = tf.where(in_b, _gather_rows(segments[1], position - start_b), word_ids)
        word_ids = tf.where(tf.equal(position, 0), tf.constant(self.start_of_sequence_id, tf.int64), word_ids)
        word_ids = tf.where(sep, tf.constant(self.end_of_segment_id, tf.int64), word_ids)
        mask = position < tf.where(new_b > 0, start_b + new_b + 1, new_a + 2)
        word_ids = tf.where(mask, word_ids, tf.constant(self.padding_id, tf.int64))
        type_ids = (position >= start_b) & mask
        return {
            "input_word_ids": tf.cast(word_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "input_type_ids": tf.cast(type_ids, tf.int32),
        }

    def compute_output_spec(self, inputs, seq_length=None):
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        length = self.seq_length if seq_length is None else (seq_length if isinstance(seq_length, int) else None)
        spec = keras.KerasTensor((first.shape[0], length), dtype="int32")
        return {"input_word_ids": spec, "input_mask": spec, "input_type_ids": spec}

    def get_config(self):
        config = super().get_config()
        config.update(
            seq_length=self.seq_length,
            start_of_sequence_id=self.start_of_sequence_id,
            end_of_segment_id=self.end_of_segment_id,
            padding_id=self.padding_id,
        )
        return config
