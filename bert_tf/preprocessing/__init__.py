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
    """`(BertTokenizer, BertPackInputs)` for `vocab_file` at `seq_length`: FullTokenizer's ids
    and the original's packing. A vocab larger than the model's `vocab_size`, or without
    [CLS] / [SEP], is a ValueError naming the file."""
    BertPackInputs.check_seq_length(seq_length)  # a length is not the vocabulary's fault: before the wrap below
    tokenizer = BertTokenizer(vocab_file, do_lower_case=do_lower_case)
    if vocab_size is not None:
        BertConfig(vocab_size=vocab_size).check_vocab_size(len(tokenizer.vocabulary), vocab_file)
    try:
        packer = BertPackInputs.from_vocabulary(tokenizer.vocabulary, seq_length)
    except ValueError as e:
        raise ValueError(f"vocab {vocab_file!r}: {e}") from None
    return tokenizer, packer

