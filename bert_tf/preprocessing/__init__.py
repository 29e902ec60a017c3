"""In-graph text preprocessing as Keras layers (TensorFlow + tensorflow-text).

Usable in tf.data pipelines and exported SavedModels; the Python rules they restate live in
`bert_tf.tokenization`.
"""

from bert_tf.config import BertConfig
from bert_tf.preprocessing.bert_basic_tokenizer import BertBasicTokenizer
from bert_tf.preprocessing.bert_pack_inputs import BertPackInputs
from bert_tf.preprocessing.bert_tokenizer import BertTokenizer

__all__ = ["BertBasicTokenizer", "BertPackInputs", "BertTokenizer", "text_preprocessing"]


def text_preprocessing(vocab_file, do_lower_case, seq_length, vocab_size=None):
    """Builds the in-graph tokenizer and packer for `vocab_file` at `seq_length`.

    Together they give FullTokenizer's ids and the original's packing.

    Args:
        vocab_file: The path of a vocab.txt.
        do_lower_case: Whether to lower-case and strip accents, as the original's uncased models.
        seq_length: The packed inputs' length, at least 3.
        vocab_size: The model's `vocab_size`, to check the vocab against; None: not checked.

    Returns:
        `(tokenizer, packer)`: a `BertTokenizer` and a `BertPackInputs` with the vocab's [CLS],
        [SEP] and [PAD] ids.

    Raises:
        FileNotFoundError: `vocab_file` is not a file.
        ValueError: `seq_length` is under 3; or the vocab is empty, holds a token twice, has no
            [UNK], [CLS] or [SEP], or is larger than `vocab_size` (these name the file).
    """
    BertPackInputs.check_seq_length(seq_length)  # a length is not the vocabulary's fault: before the wrap below
    tokenizer = BertTokenizer(vocab_file, do_lower_case=do_lower_case)
    if vocab_size is not None:
        BertConfig(vocab_size=vocab_size).check_vocab_size(len(tokenizer.vocabulary), vocab_file)
    try:
        packer = BertPackInputs.from_vocabulary(tokenizer.vocabulary, seq_length)
    except ValueError as e:
        raise ValueError(f"vocab {vocab_file!r}: {e}") from None
    return tokenizer, packer

