"""Packing one or two segments of WordPiece ids into BERT's fixed-length inputs, in graph."""

import keras
import tensorflow as tf
import tensorflow_text as tf_text


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


def _keep_first(segment, lengths):
    positions = tf.ragged.range(segment.row_lengths())
    return tf.ragged.boolean_mask(segment, positions < tf.expand_dims(lengths, 1))


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPackInputs(keras.layers.Layer):
    """[CLS] A [SEP] (B [SEP]), truncated as the original's fine-tuning scripts, padded.

    Call with one int `tf.RaggedTensor [batch, (ids)]` or a list of two, and optionally
    `seq_length=` (an int or an int32 scalar tensor, at least 3) for another length than the
    layer's, as TF Hub's `bert_pack_inputs(segments, seq_length=N)`. Returns a dict of int32
    `[batch, seq_length]` tensors: `input_word_ids` (padded with `padding_id`), `input_mask`
    (1 for real tokens) and `input_type_ids` (0 for [CLS] A [SEP], 1 for B [SEP]).

    Truncation: one segment keeps its first seq_length - 2 ids; a pair is cut to seq_length - 3
    by removing ids from the end of the longer segment first (B on ties). A row whose B is empty
    is packed as a single segment, as the original does for an example without text_b tokens.
    """

    def __init__(self, seq_length, start_of_sequence_id, end_of_segment_id, padding_id=0, **kwargs):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if seq_length < 3:
            raise ValueError(f"seq_length {seq_length} leaves no room for [CLS] A [SEP] B [SEP]")
        self.seq_length = seq_length
        self.start_of_sequence_id = start_of_sequence_id
        self.end_of_segment_id = end_of_segment_id
        self.padding_id = padding_id
        self.built = True

    @classmethod
    def from_vocabulary(cls, vocabulary, seq_length, **kwargs):
        """Takes the [CLS]/[SEP]/[PAD] ids from a vocab (a dict or a list of tokens)."""
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
        segments = [tf.cast(s, tf.int64) for s in segments]
        len_a = segments[0].row_lengths()
        single_budget = tf.minimum(len_a, seq_length - 2)
        if len(segments) == 1:
            segments = [_keep_first(segments[0], single_budget)]
        else:
            a, b = segments
            len_b = b.row_lengths()
            new_a, new_b = longest_first_lengths(len_a, len_b, seq_length - 3)
            # The original packs an example whose B has no tokens as a single segment.
            single = tf.equal(len_b, 0)
            segments = [_keep_first(a, tf.where(single, single_budget, new_a)), _keep_first(b, new_b)]
        ids, type_ids = tf_text.combine_segments(
            segments, self.start_of_sequence_id, self.end_of_segment_id
        )
        if len(segments) == 2:  # drop the empty B's [SEP] from rows packed as single
            lengths = ids.row_lengths()
            last = tf.equal(tf.ragged.range(lengths), tf.expand_dims(lengths - 1, 1))
            keep = tf.logical_not(tf.logical_and(last, tf.expand_dims(single, 1)))
            ids = tf.ragged.boolean_mask(ids, keep)
            type_ids = tf.ragged.boolean_mask(type_ids, keep)
        word_ids, mask = tf_text.pad_model_inputs(ids, seq_length, pad_value=self.padding_id)
        type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length, pad_value=0)
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
