"""A fine-tuned span labeler (run_squad.py's BertSpanLabeler) as a SavedModel that takes a question
and its context as text, of any length, and answers as run_squad.py does.

    model = tf.saved_model.load(path)  # tensorflow_text imported first, for its ops
    out = model.signatures["serving_default"](question=tf.constant(["Who sat?"]),
                                               context=tf.constant(["The cat sat on the mat."]))
    out["answer"]  # [b"The cat"]

In the graph, as run_squad.py builds its features and writes predictions.json
(`bert_tf.tasks.squad.answers`): the question's WordPieces cut to `max_query_length`; the
context's whitespace words tokenized one by one and cut into windows `doc_stride` pieces apart,
each packed as `[CLS] question [SEP] window [SEP]`; every window of the request run as one batch;
each window's n-best starts and ends, a span kept only in the window where its start has the most
context; the n-best list of distinct answer texts, each projected onto the context's words as the
original projects it; on v2.0 the null answer against the threshold. Outputs, `[batch]` each
unless said:
- `answer` (string): the answer text (v2.0: "" when the null answer wins; "empty" where no span
  is left, the original's nonce), `start_char` and `end_char` (int64: its characters in the
  context, end exclusive; -1 when the answer is no span), `score` (float32: its n-best
  probability); on v2.0, `null_score_diff` (float32);
- the n-best list, best first, padded to `n_best_size` (+1 on v2.0): `nbest_text`,
  `nbest_probability`, `nbest_start_logit`, `nbest_end_logit`, `nbest_start_char`,
  `nbest_end_char` (`[batch, n]`) and `nbest_size` (int32);
- the first window's own outputs, as earlier exports gave them (`[batch, length]`, `length` that
  window's longest packed length in the request, rounded up to the export's length bucket):
  `start_logits` and `end_logits` (float32), `tokens` (string: the WordPiece at each position,
  "" on padding) and `input_type_ids` (int32: 1 on the context and its [SEP]).

The n-best settings default to run_squad.py's: 20 entries, answers of at most 30 pieces, a
null-score threshold of 0.0. The export takes a window's best starts and ends among its real
positions; run_squad.py among all of a feature's, its padding's included (the original's rule).
Where a padding position's logit is among the best, the two n-best lists can differ.
"""

import dataclasses

import tensorflow as tf

from bert_tf.errors import shown
from bert_tf.export.common import (
    DEFAULT_SERVING,
    SavedModelRoot,
    string_spec,
    write_text_in_export,
)
from bert_tf.tasks.squad.answers import answer_examples
from bert_tf.tasks.squad.settings import Settings

# run_squad.py's defaults (its settings') of the windows and of the settings its predictions take.
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Settings)}
DOC_STRIDE, N_BEST_SIZE = _DEFAULTS["doc_stride"], _DEFAULTS["n_best_size"]
MAX_ANSWER_LENGTH, NULL_SCORE_DIFF_THRESHOLD = _DEFAULTS["max_answer_length"], _DEFAULTS["null_score_diff_threshold"]


class SpanLabelerSavedModel(SavedModelRoot):
    """Root object of a span-labeler export: `__call__(question, context)` = the signature."""

    def __init__(self, model, tokenizer, packer, run_model, max_query_length, doc_stride=DOC_STRIDE,
                 version_2_with_negative=False, n_best_size=N_BEST_SIZE, max_answer_length=MAX_ANSWER_LENGTH,
                 null_score_diff_threshold=NULL_SCORE_DIFF_THRESHOLD):
        super().__init__(model)
        vocabulary = tf.constant(tokenizer.vocabulary)

        def serve(question, context):
            return answer_examples(tokenizer, packer, run_model, vocabulary, question, context, max_query_length,
                                   doc_stride, n_best_size, max_answer_length, version_2_with_negative,
                                   null_score_diff_threshold, first_window=True)

        specs = [string_spec("question"), string_spec("context")]
        self.__call__ = tf.function(serve, input_signature=specs, autograph=False)


def export_squad(model, vocab_file, do_lower_case, seq_length, max_query_length, export_dir,
                 task=None, overwrite=False, serving=DEFAULT_SERVING, doc_stride=DOC_STRIDE,
                 version_2_with_negative=False,
                 n_best_size=N_BEST_SIZE, max_answer_length=MAX_ANSWER_LENGTH,
                 null_score_diff_threshold=NULL_SCORE_DIFF_THRESHOLD):
    """Writes a fine-tuned `BertSpanLabeler` to `export_dir` with a `serving_default` taking
    `question` and `context` strings and answering (see the module's docstring). `max_query_length`
    must leave room for context in `seq_length`; doc_stride: the pieces between the context's
    windows; version_2_with_negative: the null answer competes (SQuAD 2.0); n_best_size,
    max_answer_length, null_score_diff_threshold: run_squad.py's prediction settings; serving: how
    the model runs (`ServingOptions`). Returns `export_dir`."""
    if not 0 < max_query_length < seq_length - 3:
        raise ValueError(
            f"{shown.max_query_length} {max_query_length} leaves no room for the context in {shown.seq_length} "
            f"{seq_length} "
            "([CLS] question [SEP] context [SEP])"
        )
    if doc_stride < 1:
        raise ValueError(f"{shown.doc_stride}={doc_stride} must be at least 1")
    return write_text_in_export(
        model,
        lambda model, tokenizer, packer, run_model: SpanLabelerSavedModel(
            model, tokenizer, packer, run_model, max_query_length, doc_stride, version_2_with_negative, n_best_size,
            max_answer_length, null_score_diff_threshold
        ),
        vocab_file, do_lower_case, seq_length, export_dir, task, overwrite, serving,
    )


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, max_query_length=None,
               serving=DEFAULT_SERVING, doc_stride=None, n_best_size=N_BEST_SIZE, max_answer_length=MAX_ANSWER_LENGTH,
               null_score_diff_threshold=NULL_SCORE_DIFF_THRESHOLD):
    """The export of a run_squad run (`max_query_length`, `doc_stride`: default the run's; SQuAD
    2.0 where the run is; the n-best settings run_squad.py's defaults unless given)."""
    return export_squad(
        model, vocab_file, record.do_lower_case, seq_length, max_query_length or record.max_query_length,
        export_dir, task=record.to_dict(), overwrite=overwrite, serving=serving,
        doc_stride=doc_stride or record.doc_stride or DOC_STRIDE,
        version_2_with_negative=bool(record.version_2_with_negative), n_best_size=n_best_size,
        max_answer_length=max_answer_length, null_score_diff_threshold=null_score_diff_threshold,
    )
