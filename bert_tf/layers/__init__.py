"""Keras 3 building blocks of BERT. Only keras.ops here: every Keras backend runs them."""

from bert_tf.layers.activations import gelu, gelu_exact, get_activation
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.classification_head import ClassificationHead
from bert_tf.layers.flatten_choices import FlattenChoices
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.layers.multi_head_attention import MultiHeadSelfAttention, attention_adder
from bert_tf.layers.sentence_pooling import SentencePooling
from bert_tf.layers.span_head import SpanHead
from bert_tf.layers.token_classification_head import TokenClassificationHead
from bert_tf.layers.transformer_block import TransformerBlock

__all__ = [
    "BertEmbeddings",
    "ClassificationHead",
    "FlattenChoices",
    "MaskedLMHead",
    "MultiHeadSelfAttention",
    "SentencePooling",
    "SpanHead",
    "TokenClassificationHead",
    "TransformerBlock",
    "attention_adder",
    "gelu",
    "gelu_exact",
    "get_activation",
]
