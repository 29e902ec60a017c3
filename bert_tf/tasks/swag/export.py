"""A fine-tuned multiple-choice model (run_swag.py's BertMultipleChoice) as a SavedModel that
takes a context and its choices as text.

    model = tf.saved_model.load(path)  # tensorflow_text imported first, for its ops
    out = model.signatures["serving_default"](
        context=tf.constant(["She opened the door."]),
        choices=tf.constant([["She walks in.", "She eats it.", "It sings.", "They fly."]]))

Inputs: `context` string `[batch]` and `choices` string `[batch, num_choices]` (for SWAG, each
choice is `sent2 + " " + ending`, the text packed after the context). In the graph, as run_swag.py:
each choice packed with its context as `[CLS] context [SEP] choice [SEP]`, the longer segment
truncated first, the model run on the request's longest sequence rounded up to the export's
length bucket (`ServingOptions`). Outputs: `probabilities` float32 `[batch, num_choices]` (softmax over the
choices), `label_id` int32 `[batch]` (the most probable choice) and `label` string `[batch]` (its
text).
"""

import tensorflow as tf

from bert_tf.export.common import (
    DEFAULT_SERVING,
    SavedModelRoot,
    as_float32,
    string_spec,
    write_text_in_export,
)


def choice_inputs(tokenizer, packer, context, choices):
    """The model's inputs `[batch, num_choices, seq_length]` for `context` `[batch]` and
    `choices` `[batch, num_choices]`: each choice packed after its context."""
    num_choices = choices.shape[1]
    rows = tf.repeat(tf.range(tf.shape(context)[0]), num_choices)  # [B * C]: b, b, b, b, b+1, ...
    context_ids = tf.gather(tokenizer(context), rows)  # [B * C, (P)]
    choice_ids = tokenizer(tf.reshape(choices, [-1]))  # [B * C, (P)]
    packed = packer([context_ids, choice_ids])  # [B * C, S] each
    return {name: tf.reshape(x, [-1, num_choices, packer.seq_length]) for name, x in packed.items()}


class MultipleChoiceSavedModel(SavedModelRoot):
    """Root object of a multiple-choice export: `__call__(context, choices)` = the signature."""

    def __init__(self, model, tokenizer, packer, run_model):
        super().__init__(model)

        def serve(context, choices):
            logits = as_float32(run_model(choice_inputs(tokenizer, packer, context, choices)))  # [B, C]
            label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)  # [B]
            return {
                "probabilities": tf.nn.softmax(logits),
                "label_id": label_id,
                "label": tf.gather(choices, label_id, batch_dims=1),
            }

        specs = [string_spec("context"), string_spec("choices", (None, model.num_choices))]
        self.__call__ = tf.function(serve, input_signature=specs, autograph=False)

def export_swag(model, vocab_file, do_lower_case, seq_length, export_dir, task=None, overwrite=False,
                serving=DEFAULT_SERVING):
    """Writes a fine-tuned `BertMultipleChoice` to `export_dir` with a `serving_default` taking a
    context and its `model.num_choices` choices as text (see the module's docstring); serving:
    how the model runs (`ServingOptions`). Returns `export_dir`."""
    return write_text_in_export(
        model, MultipleChoiceSavedModel,  # called as make_root(model, tokenizer, packer, run_model)
        vocab_file, do_lower_case, seq_length, export_dir, task, overwrite, serving,
    )


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, serving=DEFAULT_SERVING):
    """The export of a run_swag run."""
    return export_swag(model, vocab_file, record.do_lower_case, seq_length, export_dir, task=record.to_dict(),
                       overwrite=overwrite, serving=serving)
