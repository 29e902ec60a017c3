"""SavedModel export (TensorFlow-specific): BERT as TF Hub publishes it and fine-tuned models
behind serving signatures that take raw text.

- `export_encoder`: TF Hub's BERT encoder interface (int32 inputs -> pooled_output,
  sequence_output, encoder_outputs, default; `training=`; fine-tunable variables).
- `export_preprocessor`: TF Hub's BERT preprocessor interface (strings -> encoder inputs;
  `.tokenize`, `.bert_pack_inputs`), with FullTokenizer's ids and the original's packing.
- `export_classifier`, `export_span_labeler`, `export_token_classifier`,
  `export_multiple_choice`: a fine-tuned model with its tokenization and packing in the graph.

An export needs TensorFlow and tensorflow-text to load, nothing of this package: no Keras object
is revived. It is written under a temporary name and renamed when complete, and carries
vocab.txt, bert_config.json (and the fine-tuning record) as assets.
"""

from bert_tf.export.archive import ExportWriter, check_export_dir
from bert_tf.export.classifier import export_classifier
from bert_tf.export.encoder import export_encoder
from bert_tf.export.multiple_choice import export_multiple_choice
from bert_tf.export.preprocessor import export_preprocessor
from bert_tf.export.span_labeler import export_span_labeler
from bert_tf.export.token_classifier import export_token_classifier

__all__ = [
    "ExportWriter",
    "check_export_dir",
    "export_classifier",
    "export_encoder",
    "export_multiple_choice",
    "export_preprocessor",
    "export_span_labeler",
    "export_token_classifier",
]
