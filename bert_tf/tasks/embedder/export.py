"""A sentence embedder (run_sentence_embedding.py's BertSentenceEmbedder, or a sentence-transformers
folder read into one) as a SavedModel that takes text and gives one vector per text.

    model = tf.saved_model.load(path)  # tensorflow_text imported first, for its ops
    out = model.signatures["serving_default"](text_a=tf.constant(["A cat sat.", "Un chat."]))
    out["embeddings"]  # float32 [2, hidden_size]

Input: `text_a` string `[batch]`. In the graph, as run_sentence_embedding.py: each text tokenized
and packed as `[CLS] text [SEP]` (truncated to the export's length), the model run on the
request's longest sequence rounded up to the export's length bucket (`ServingOptions`), its token
vectors pooled over the real tokens (and L2-normalized) as the model's pooling says. Output:
`embeddings` float32 `[batch, hidden_size]`.
"""

import tensorflow as tf

from bert_tf.export.common import DEFAULT_SERVING, SavedModelRoot, as_float32, string_spec, write_text_in_export
from bert_tf.tasks.classifier.inputs import TextPacker


class EmbedderSavedModel(SavedModelRoot):
    """Root object of an embedder export: `__call__(text_a)` = the serving signature."""

    def __init__(self, model, tokenizer, packer, run_model):
        super().__init__(model)
        pack = TextPacker(tokenizer, packer, pair=False)

        def serve(text_a):
            return {"embeddings": as_float32(run_model(pack(text_a, None)))}

        self.__call__ = tf.function(serve, input_signature=[string_spec("text_a")], autograph=False)


def export_embedder(model, vocab_file, do_lower_case, seq_length, export_dir, task=None, overwrite=False,
                    serving=DEFAULT_SERVING):
    """Writes a `BertSentenceEmbedder` to `export_dir` with a text-in `serving_default` (see the
    module's docstring); serving: how the model runs (`ServingOptions`). Returns `export_dir`."""
    return write_text_in_export(model, EmbedderSavedModel, vocab_file, do_lower_case, seq_length, export_dir, task,
                                overwrite, serving)


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, serving=DEFAULT_SERVING):
    """The export of a run_sentence_embedding run."""
    return export_embedder(model, vocab_file, record.do_lower_case, seq_length, export_dir, task=record.to_dict(),
                           overwrite=overwrite, serving=serving)
