"""A fine-tuned classifier (run_classifier.py's BertClassifier) as a SavedModel that takes text.

    model = tf.saved_model.load(path)  # tensorflow_text imported first, for its ops
    out = model.signatures["serving_default"](text_a=tf.constant(["The cat sat."]),
                                               text_b=tf.constant(["A cat sat."]))  # pair tasks

Inputs: `text_a` (and `text_b` for sentence-pair tasks), string `[batch]`, tokenized and packed in
the graph exactly as run_classifier.py does (the model runs on the request's longest sequence,
rounded up to the export's length bucket: `bert_tf.export.serving.ServingOptions`). Outputs, by
the task's kind of label:
- single label: `probabilities` float32 `[batch, labels]` (softmax), `label_id` int32 `[batch]`
  (the most probable) and `label` string `[batch]` (its name);
- regression (STS-B): `score` float32 `[batch]`;
- multi-label: `probabilities` float32 `[batch, labels]` (one sigmoid each), `label_id` int32
  `[batch, labels]` (1 where the probability is above 0.5) and `label` string `[batch]` (those
  labels' names joined by commas, as test_predictions.tsv writes them).

The export of a run with `max_windows` above 1 reads texts of any length as run_classifier.py
does: each text is cut into its windows in the graph (`bert_tf.preprocessing.text_windows`),
the request's windows run as one batch, and their logits are pooled into one row per text. Its
extra output `windows` int32 `[batch]` says how many windows each text took.
"""

import tensorflow as tf

from bert_tf.export.common import (
    DEFAULT_SERVING,
    SavedModelRoot,
    as_float32,
    string_spec,
    write_text_in_export,
)
from bert_tf.models.bert_encoder import INPUT_NAMES
from bert_tf.preprocessing.text_windows import WINDOW_COUNT, WINDOW_TEXT, export_windows, pool_windows
from bert_tf.tasks.classifier.inputs import LABEL_KINDS, TextPacker
from bert_tf.tasks.classifier.task import MULTI_LABEL_THRESHOLD


def classifier_outputs(logits, labels, label_kind):
    """The serving outputs (see the module's docstring) from float32 logits `[batch, outputs]`."""
    if label_kind == "regression":
        return {"score": logits[:, 0]}
    names = tf.constant(list(labels))
    if label_kind == "single":
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # [B]
        return {"probabilities": tf.nn.softmax(logits), "label_id": label_id, "label": tf.gather(names, label_id)}
    probabilities = tf.sigmoid(logits)  # [B, L]
    predicted = probabilities > MULTI_LABEL_THRESHOLD
    chosen = tf.ragged.boolean_mask(tf.broadcast_to(names, tf.shape(predicted)), predicted)  # [B, (labels)]
    return {
        "probabilities": probabilities,
        "label_id": tf.cast(predicted, tf.int32),
        "label": tf.strings.reduce_join(chosen, axis=1, separator=","),
    }


class ClassifierSavedModel(SavedModelRoot):
    """Root object of a classifier export: `__call__(text_a[, text_b])` = the serving signature."""

    def __init__(self, model, tokenizer, packer, run_model, labels, label_kind, pair, windows=None):
        super().__init__(model)
        pack = TextPacker(tokenizer, packer, pair, windows and windows[:2])

        def serve(text_a, text_b):
            inputs = pack(text_a, text_b)
            if windows is None:
                logits = as_float32(run_model(inputs))  # [B, outputs]
                return classifier_outputs(logits, labels, label_kind)
            logits = as_float32(run_model({name: inputs[name] for name in INPUT_NAMES}))  # [windows, outputs]
            pooled = pool_windows(logits, inputs[WINDOW_TEXT], tf.size(inputs[WINDOW_COUNT]), windows[2])
            return {**classifier_outputs(pooled, labels, label_kind), "windows": inputs[WINDOW_COUNT]}

        if pair:
            specs = [string_spec("text_a"), string_spec("text_b")]
            self.__call__ = tf.function(serve, input_signature=specs, autograph=False)
        else:
            specs = [string_spec("text_a")]
            self.__call__ = tf.function(lambda text_a: serve(text_a, None), input_signature=specs, autograph=False)

def export_classifier(model, labels, label_kind, pair, vocab_file, do_lower_case, seq_length, export_dir,
                      task=None, overwrite=False, serving=DEFAULT_SERVING, windows=None):
    """Writes a fine-tuned `BertClassifier` to `export_dir` with a text-in `serving_default`.

    labels: the label names (the model's outputs, in order; empty for regression); label_kind:
    "single", "regression" or "multi"; pair: whether the task reads `text_b`; vocab_file /
    do_lower_case / seq_length: the tokenization and packing (as fine-tuned; seq_length the
    longest, see `ServingOptions.length_bucket`); task: the fine-tuning record, kept as an asset;
    serving: how the model runs (`ServingOptions`: int8 quantizes `model` in place); windows:
    None (texts cut to seq_length), or `(max_windows, doc_stride, window_pooling)` to read long
    texts as windows of seq_length. Returns `export_dir`.
    """
    if label_kind not in LABEL_KINDS:
        raise ValueError(f"label_kind {label_kind!r} is not one of {', '.join(LABEL_KINDS)}")
    outputs = 1 if label_kind == "regression" else len(labels)
    if model.num_classes != outputs:
        raise ValueError(
            f"the model has {model.num_classes} outputs, but {label_kind!r} labels {list(labels)} need {outputs}"
        )
    return write_text_in_export(
        model,
        lambda model, tokenizer, packer, run_model: ClassifierSavedModel(
            model, tokenizer, packer, run_model, labels, label_kind, pair, windows
        ),
        vocab_file, do_lower_case, seq_length, export_dir, task, overwrite, serving,
    )


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, serving=DEFAULT_SERVING,
               doc_stride=None):
    """The export of a run_classifier run: its `RunRecord` gives the labels, their kind, whether
    text_b is read, the casing and the windows of long texts (`doc_stride`: another stride)."""
    windows = export_windows(record, seq_length, doc_stride)
    return export_classifier(
        model, record.labels, record.label_kind, record.pair, vocab_file, record.do_lower_case, seq_length,
        export_dir, task=record.to_dict(), overwrite=overwrite, serving=serving,
        windows=windows and windows + (record.window_pooling,),
    )
