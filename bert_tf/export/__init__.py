"""SavedModel export (TensorFlow-specific): BERT as TF Hub publishes it and fine-tuned models
behind serving signatures that take raw text.

- `export_encoder`: TF Hub's BERT encoder interface (int32 inputs -> pooled_output,
  sequence_output, encoder_outputs, default; `training=`; fine-tunable variables).
- `export_preprocessor`: TF Hub's BERT preprocessor interface (strings -> encoder inputs;
  `.tokenize`, `.bert_pack_inputs`), with FullTokenizer's ids and the original's packing.

Each fine-tuning task's export (a fine-tuned model behind a text-in signature, its tokenization
and packing in the graph) lives in its task's folder (`bert_tf.tasks.<kind>.export`) and is
found through `bert_tf.runs.registry`; the pieces here are what they share. `exports` is
export_saved_model.py without its flags: what each export type reads, and the writing.

An export needs TensorFlow and tensorflow-text to load, nothing of this package: no Keras object
is revived. It is written under a temporary name and renamed when complete, and carries
vocab.txt, bert_config.json (and the fine-tuning record) as assets.
"""

from bert_tf.export.archive import ExportWriter, check_export_dir
from bert_tf.export.encoder import export_encoder
from bert_tf.export.preprocessor import export_preprocessor

__all__ = ["ExportWriter", "check_export_dir", "export_encoder", "export_preprocessor"]


def __getattr__(name):
    """The task exports' old names, resolved only when used (PEP 562): they live above this layer."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
