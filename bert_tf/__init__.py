"""bert_tf: BERT (Devlin et al., 2018) in TensorFlow / Keras 3, compatible with Google's release.

The modeling code (`bert_tf.layers`, `bert_tf.models`) uses keras.ops only and runs on every
Keras backend; TensorFlow-specific parts (checkpoints, tf.data, tensorflow-text) live in their
own modules and are imported explicitly.
"""

from bert_tf.config import BertConfig
from bert_tf.models import BertEncoder, BertPretrainer

__version__ = "0.1.0"
__all__ = ["BertConfig", "BertEncoder", "BertPretrainer", "__version__"]
