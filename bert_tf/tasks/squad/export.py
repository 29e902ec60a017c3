"""A fine-tuned span labeler (run_squad.py's BertSpanLabeler) as a SavedModel that takes a question
and its context as text.

    model = tf.saved_model.load(path)  # tensorflow_text imported first, for its ops
    out = model.signatures["serving_default"](question=tf.constant(["Who sat?"]),
                                               context=tf.constant(["The cat sat on the mat."]))

In the graph, as run_squad.py builds a feature: the question's WordPieces cut to
`max_query_length`, the context's cut to what is left of `seq_length` (one window: no doc
stride), packed as `[CLS] question [SEP] context [SEP]`. Outputs, `[batch, length]` each, where
`length` is the request's longest sequence rounded up to the export's length bucket (at most
seq_length; exactly seq_length in an export of fixed length, `ServingOptions`):
`start_logits` and `end_logits` (float32), `tokens` (string: the WordPiece at each position,
"" on padding), and `input_type_ids` (int32: 1 on the context and its [SEP]), so that a client
can pick the best span within the context and read its pieces.
"""

import tensorflow as tf

from bert_tf.errors import shown
from bert_tf.export.common import (
    DEFAULT_SERVING,
    SavedModelRoot,
    as_float32,
    string_spec,
    write_text_in_export,
)


def keep_first(ids, lengths):
    """The first `lengths` (int64 `[batch]`, possibly <= 0) ids of each row of `ids` `[batch, (n)]`."""
    positions = tf.ragged.range(ids.row_lengths())
    return tf.ragged.boolean_mask(ids, positions < tf.expand_dims(lengths, 1))


def question_context_inputs(tokenizer, packer, question, context, max_query_length):
    """The encoder's inputs for `question` and `context` (string `[batch]`), as run_squad.py's
    first window: `[CLS] question[:max_query_length] [SEP] context[:room] [SEP]`."""
    question_ids = tokenizer(question)[:, :max_query_length]  # [B, (Q)]
    context_ids = tokenizer(context)  # [B, (C)]
    room = packer.seq_length - 3 - question_ids.row_lengths()  # the original's max_tokens_for_doc
    return packer([question_ids, keep_first(context_ids, room)])


class SpanLabelerSavedModel(SavedModelRoot):
    """Root object of a span-labeler export: `__call__(question, context)` = the signature."""

    def __init__(self, model, tokenizer, packer, run_model, max_query_length):
        super().__init__(model)
        vocabulary = tf.constant(tokenizer.vocabulary)

        def serve(question, context):
            inputs = question_context_inputs(tokenizer, packer, question, context, max_query_length)
            outputs = run_model(inputs)  # [B, L]: the inputs' length, cut to the bucket
            length = tf.shape(outputs["start_logits"])[1]
            inputs = {name: x[:, :length] for name, x in inputs.items()}  # [B, L]
            real = inputs["input_mask"] > 0  # [B, S]
            return {
                "start_logits": as_float32(outputs["start_logits"]),
                "end_logits": as_float32(outputs["end_logits"]),
                "tokens": tf.where(real, tf.gather(vocabulary, inputs["input_word_ids"]), ""),
                "input_type_ids": inputs["input_type_ids"],
            }

        specs = [string_spec("question"), string_spec("context")]
        self.__call__ = tf.function(serve, input_signature=specs, autograph=False)

def export_squad(model, vocab_file, do_lower_case, seq_length, max_query_length, export_dir,
                        task=None, overwrite=False, serving=DEFAULT_SERVING):
    """Writes a fine-tuned `BertSpanLabeler` to `export_dir` with a `serving_default` taking
    `question` and `context` strings (see the module's docstring). `max_query_length` must leave
    room for context in `seq_length`; serving: how the model runs (`ServingOptions`). Returns
    `export_dir`."""
    if not 0 < max_query_length < seq_length - 3:
        raise ValueError(
            f"{shown.max_query_length} {max_query_length} leaves no room for the context in {shown.seq_length} "
            f"{seq_length} "
            "([CLS] question [SEP] context [SEP])"
        )
    return write_text_in_export(
        model,
        lambda model, tokenizer, packer, run_model: SpanLabelerSavedModel(
            model, tokenizer, packer, run_model, max_query_length
        ),
        vocab_file, do_lower_case, seq_length, export_dir, task, overwrite, serving,
    )


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, max_query_length=None,
               serving=DEFAULT_SERVING):
    """The export of a run_squad run (`max_query_length`: default the run's)."""
    return export_squad(
        model, vocab_file, record.do_lower_case, seq_length, max_query_length or record.max_query_length,
        export_dir, task=record.to_dict(), overwrite=overwrite, serving=serving,
    )
