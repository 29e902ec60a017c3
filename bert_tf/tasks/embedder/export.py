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

The export of a run with `max_windows` above 1 reads texts of any length as
run_sentence_embedding.py does: each text is cut into its windows in the graph
(`bert_tf.preprocessing.text_windows`), the request's windows run as one batch, and each text's
vector is the mean of its windows' vectors weighted by their real tokens (then L2-normalized when
the run normalizes). Its extra output `windows` int32 `[batch]` says how many windows each text
took.
"""

import tensorflow as tf

from bert_tf.export.common import DEFAULT_SERVING, SavedModelRoot, as_float32, string_spec, write_text_in_export
from bert_tf.models import BertSentenceEmbedder
from bert_tf.models.bert_encoder import INPUT_NAMES
from bert_tf.preprocessing.text_windows import WINDOW_COUNT, WINDOW_TEXT, export_windows
from bert_tf.tasks.classifier.inputs import TextPacker
from bert_tf.tasks.embedder.task import window_vectors


class EmbedderSavedModel(SavedModelRoot):
    """Root object of an embedder export: `__call__(text_a)` = the serving signature."""

    def __init__(self, model, tokenizer, packer, run_model, windows=None, normalize=False):
        super().__init__(model)
        pack = TextPacker(tokenizer, packer, pair=False, windows=windows)

        def serve(text_a):
            inputs = pack(text_a, None)
            if windows is None:
                return {"embeddings": as_float32(run_model(inputs))}
            text, count = inputs[WINDOW_TEXT], inputs[WINDOW_COUNT]
            inputs = {name: inputs[name] for name in INPUT_NAMES}
            vectors = as_float32(run_model(inputs))  # [windows, hidden], not normalized (see export_embedder)
            return {"embeddings": window_vectors(vectors, inputs["input_mask"], text, tf.size(count), normalize),
                    "windows": count}

        self.__call__ = tf.function(serve, input_signature=[string_spec("text_a")], autograph=False)


def export_embedder(model, vocab_file, do_lower_case, seq_length, export_dir, task=None, overwrite=False,
                    serving=DEFAULT_SERVING, windows=None):
    """Writes a `BertSentenceEmbedder` to `export_dir` with a text-in `serving_default` (see the
    module's docstring); serving: how the model runs (`ServingOptions`); windows: None (texts cut
    to seq_length) or `(max_windows, doc_stride)`. Returns `export_dir`."""
    if windows is None:
        return write_text_in_export(model, EmbedderSavedModel, vocab_file, do_lower_case, seq_length, export_dir,
                                    task, overwrite, serving)
    # The windows' vectors are averaged before the text's is normalized: a model that normalizes is
    # run as a twin on the same encoder that does not, and the export normalizes after pooling.
    if model.normalize:
        model_run = BertSentenceEmbedder(model.encoder, model.pooling, normalize=False, name=model.name)
    else:
        model_run = model
    return write_text_in_export(
        model_run, lambda m, tokenizer, packer, run_model: EmbedderSavedModel(m, tokenizer, packer, run_model, windows,
                                                                          model.normalize),
        vocab_file, do_lower_case, seq_length, export_dir, task, overwrite, serving)


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, serving=DEFAULT_SERVING,
               doc_stride=None):
    """The export of a run_sentence_embedding run (its record's casing and windows; `doc_stride`:
    another stride)."""
    return export_embedder(model, vocab_file, record.do_lower_case, seq_length, export_dir, task=record.to_dict(),
                           overwrite=overwrite, serving=serving,
                           windows=export_windows(record, seq_length, doc_stride))
