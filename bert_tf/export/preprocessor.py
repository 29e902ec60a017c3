"""The text preprocessor as a SavedModel with TF Hub's BERT preprocessor interface.

Loaded with `tf.saved_model.load` (tensorflow_text imported first, for its ops) or through
`hub.KerasLayer`:

    preprocessor = tf.saved_model.load(path)
    preprocessor(strings)                # string [batch] -> the encoder's three int32 inputs
                                         # [batch, length] (one segment; see below)
    a = preprocessor.tokenize(strings)   # int32 RaggedTensor [batch, (words), (wordpieces)]
    preprocessor.bert_pack_inputs([a, b], seq_length=256)  # one or two segments, ragged rank 1
                                         # or 2; seq_length optional (default: the export's)
    preprocessor.tokenize.get_special_tokens_dict()  # vocab_size, start_of_sequence_id, ...

The ids are FullTokenizer's (`BertTokenizer`) and the packing the original's fine-tuning scripts'
(`BertPackInputs`: [CLS] A [SEP] B [SEP], the longer segment truncated first, zero padding), so
an export gives exactly the inputs the original's Python gives.

TF Hub's preprocessors pack the default call to a fixed 128. Here the default call pads to the
request's longest sequence rounded up to `length_bucket` (at most the export's seq_length), so
that the encoder that follows pays for the text and not the padding; the encoder's outputs on
the real tokens are the same (its attention masks the padding). `length_bucket=None` keeps TF
Hub's fixed length. `bert_pack_inputs` keeps TF Hub's meaning: it always pads to its
`seq_length` (default the export's), since a caller who names a length wants that shape.
"""

import tensorflow as tf

from bert_tf.data.lengths import cut_padding
from bert_tf.errors import shown
from bert_tf.export.archive import ExportWriter
from bert_tf.export.common import DEFAULT_SERVING, SavedModelRoot, string_spec
from bert_tf.models.bert_encoder import INPUT_NAMES
from bert_tf.preprocessing import text_preprocessing


def word_pieces(tokenizer, text):
    """`text` string `[batch]` -> int32 ids `[batch, (words), (wordpieces)]`: the original's words
    (BasicTokenizer), each split by WordPiece; merging the last two dimensions gives
    `tokenizer(text)`."""
    words = tokenizer.basic_tokenize(text)  # [B, (W)]
    one_per_row = tf.RaggedTensor.from_row_lengths(
        words.flat_values, tf.ones_like(words.flat_values, tf.int64), validate=False
    )  # [W_total, (1)]
    pieces = tokenizer.wordpiece(one_per_row)  # [W_total, (P)]
    return tf.RaggedTensor.from_row_splits(pieces, words.row_splits, validate=False)


class _Tokenize(tf.train.Checkpoint):
    """`preprocessor.tokenize`: strings `[batch]` -> int32 `[batch, (words), (wordpieces)]`."""

    def __init__(self, tokenizer, special_tokens):
        super().__init__()
        self.__call__ = tf.function(
            lambda text: word_pieces(tokenizer, text), input_signature=[string_spec("text")], autograph=False
        )
        self.get_special_tokens_dict = tf.function(
            lambda: {name: tf.constant(value, tf.int32) for name, value in special_tokens.items()},
            input_signature=[],
            autograph=False,
        )


class _PackInputs(tf.train.Checkpoint):
    """`preprocessor.bert_pack_inputs(segments, seq_length=default)`: a list of one or two int32
    RaggedTensors `[batch, (ids)]` or `[batch, (words), (ids)]` -> the encoder's inputs."""

    def __init__(self, packer):
        super().__init__()

        @tf.function(autograph=False)
        def call(inputs, seq_length=packer.seq_length):
            tf.debugging.assert_greater_equal(seq_length, 3, message="seq_length must be at least 3")
            segments = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s for s in inputs]
            return packer(segments, seq_length=seq_length)

        # The loaded object can only run what was traced: every accepted form, seq_length a tensor.
        for ragged_rank in (1, 2):
            for num_segments in (1, 2):
                segment = tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32, ragged_rank=ragged_rank)
                call.get_concrete_function([segment] * num_segments, seq_length=tf.TensorSpec([], tf.int32))
        self.__call__ = call


class PreprocessorSavedModel(SavedModelRoot):
    """Root object of a preprocessor export: `__call__`, `tokenize`, `bert_pack_inputs`."""

    def __init__(self, tokenizer, packer, length_bucket=DEFAULT_SERVING.length_bucket):
        super().__init__()
        vocab = {token: i for i, token in enumerate(tokenizer.vocabulary)}
        special = {
            "vocab_size": len(tokenizer.vocabulary),
            "start_of_sequence_id": packer.start_of_sequence_id,
            "end_of_segment_id": packer.end_of_segment_id,
            "padding_id": packer.padding_id,
        }
        if "[MASK]" in vocab:
            special["mask_id"] = vocab["[MASK]"]
        self.tokenize = _Tokenize(tokenizer, special)
        self.bert_pack_inputs = _PackInputs(packer)
        self.__call__ = tf.function(
            lambda text: cut_padding(packer(tokenizer(text)), length_bucket, INPUT_NAMES),
            input_signature=[string_spec("text")],
            autograph=False,
        )


def export_preprocessor(vocab_file, do_lower_case, export_dir, seq_length=128, overwrite=False,
                        length_bucket=DEFAULT_SERVING.length_bucket):
    """Writes the text preprocessor for `vocab_file` to `export_dir` as a SavedModel.

    The export has TF Hub's BERT preprocessor interface (module docstring), packing to at most
    `seq_length`. Its assets carry vocab.txt (and `do_lower_case`) and serving.json (seq_length,
    length_bucket).

    Args:
        vocab_file: The path of a vocab.txt.
        do_lower_case: Whether to lower-case and strip accents, as the original's uncased models.
        export_dir: The directory to write.
        seq_length: The longest packed length, and `bert_pack_inputs`' default length (at least 3).
        overwrite: Whether an existing export at `export_dir` may be replaced.
        length_bucket: The default call pads to the request's longest sequence rounded up to a
            multiple of this, at most `seq_length` (1, the default: its exact length); None:
            always to `seq_length`, as TF Hub's.

    Returns:
        `export_dir`.

    Raises:
        ValueError: `length_bucket` is under 1, `seq_length` under 3, the vocab cannot be packed
            for (`text_preprocessing`), or the folder that holds `export_dir` cannot take the
            staged export.
        FileNotFoundError: `vocab_file` is not a file.
        FileExistsError: `export_dir` cannot be written (`check_export_dir`).
    """
    if length_bucket is not None and length_bucket < 1:
        raise ValueError(f"{shown.length_bucket}={length_bucket} must be a positive integer")
    tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, seq_length)
    with ExportWriter(export_dir, overwrite) as writer:
        root = PreprocessorSavedModel(tokenizer, packer, length_bucket)
        root.attach_assets(writer, vocab_file, do_lower_case)
        root.serving_file = writer.asset_json({"seq_length": seq_length, "length_bucket": length_bucket},
                                              "serving.json")
        writer.save(root, {"serving_default": root.__call__})
    return export_dir
