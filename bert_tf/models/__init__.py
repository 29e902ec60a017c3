"""BERT models: the encoder (backbone) and models that put heads on it or pool it (one vector per text)."""

from bert_tf.models.bert_classifier import BertClassifier
from bert_tf.models.bert_encoder import INPUT_NAMES, BertEncoder, encoder_inputs, padding_skipped
from bert_tf.models.bert_feature_tagger import BertFeatureTagger
from bert_tf.models.bert_multiple_choice import BertMultipleChoice
from bert_tf.models.bert_pretrainer import (
    MASKED_LM_DENOMINATOR_EPSILON,
    BertPretrainer,
    masked_lm_loss,
    masked_lm_xent,
    next_sentence_loss,
    next_sentence_xent,
)
from bert_tf.models.bert_sentence_embedder import BertSentenceEmbedder, in_batch_negatives_xent
from bert_tf.models.bert_span_labeler import BertSpanLabeler
from bert_tf.models.bert_token_classifier import BertTokenClassifier

__all__ = [
    "INPUT_NAMES",
    "MASKED_LM_DENOMINATOR_EPSILON",
    "BertClassifier",
    "BertEncoder",
    "BertFeatureTagger",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSentenceEmbedder",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "encoder_inputs",
    "in_batch_negatives_xent",
    "masked_lm_loss",
    "masked_lm_xent",
    "next_sentence_loss",
    "next_sentence_xent",
    "padding_skipped",
]
