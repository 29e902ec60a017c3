"""BERT models: the encoder (backbone) and models that put heads on it."""

from bert_tf.models.bert_encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from bert_tf.models.bert_pretrainer import BertPretrainer, masked_lm_loss, next_sentence_loss

__all__ = [
    "INPUT_NAMES",
    "BertEncoder",
    "BertPretrainer",
    "encoder_inputs",
    "masked_lm_loss",
    "next_sentence_loss",
]
