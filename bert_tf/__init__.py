"""bert_tf: BERT (Devlin et al., 2018) in TensorFlow / Keras 3, compatible with Google's release.

The modeling code (`bert_tf.layers`, `bert_tf.models`) uses keras.ops only and runs on every
Keras backend; TensorFlow-specific parts (checkpoints, tf.data, tensorflow-text) live in their
own modules and are imported explicitly.
"""

import importlib

from bert_tf.config import BertConfig

__version__ = "0.1.0"
_MODELS = (
    "BertClassifier", "BertEncoder", "BertMultipleChoice", "BertPretrainer", "BertSpanLabeler", "BertTokenClassifier",
)
__all__ = [*_MODELS, "BertConfig", "__version__"]

# The models load Keras (and its backend) on first use, so that `import bert_tf.data...` or
# `bert_tf.tokenization` stay light.
_LAZY = {name: "bert_tf.models" for name in _MODELS}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")
