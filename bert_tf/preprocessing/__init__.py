"""In-graph text preprocessing as Keras layers (TensorFlow + tensorflow-text).

Usable in tf.data pipelines and exported SavedModels; the Python rules they restate live in
`bert_tf.tokenization`.
"""

from bert_tf.preprocessing.bert_basic_tokenizer import BertBasicTokenizer
from bert_tf.preprocessing.bert_pack_inputs import BertPackInputs
from bert_tf.preprocessing.bert_tokenizer import BertTokenizer

__all__ = ["BertBasicTokenizer", "BertPackInputs", "BertTokenizer"]
