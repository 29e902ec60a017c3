"""The encoder as a SavedModel with TF Hub's BERT encoder interface.

Loaded with `tf.saved_model.load` (or `hub.load`, or `hub.KerasLayer(path, trainable=True)`):

    encoder = tf.saved_model.load(path)
    outputs = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    # ids, mask, types: int32 [batch, seq]
    outputs["pooled_output"]    # float32 [batch, hidden]
    outputs["sequence_output"]  # float32 [batch, seq, hidden]
    outputs["encoder_outputs"]  # list of float32 [batch, seq, hidden], one per layer
    outputs["default"]          # = pooled_output
    encoder(inputs, training=True)  # with dropout, to fine-tune through encoder.trainable_variables

The `serving_default` signature takes the three inputs as named int32 tensors and returns the
same outputs, the layers as `encoder_outputs_0` ... `encoder_outputs_{L-1}` (a signature returns
a flat dict of tensors).
"""

import tensorflow as tf

from bert_tf.export.archive import ExportWriter
from bert_tf.export.common import SavedModelRoot, as_float32
from bert_tf.models.bert_encoder import INPUT_NAMES


def _input_specs():
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}


class EncoderSavedModel(SavedModelRoot):
    """Root object of an encoder export: `__call__(inputs, training=False)` and the variables.

    encoder: a `BertEncoder` (any dtype policy: outputs are float32).
    """

    def __init__(self, encoder):
        super().__init__(encoder)

        @tf.function(autograph=False)
        def call(inputs, training=False):
            outputs = encoder({name: inputs[name] for name in INPUT_NAMES}, training=training)
            pooled = as_float32(outputs["pooled_output"])
            return {
                "pooled_output": pooled,
                "sequence_output": as_float32(outputs["sequence_output"]),
                "encoder_outputs": [as_float32(x) for x in outputs["encoder_outputs"]],
                "default": pooled,
            }

        # Both modes are traced: the loaded object has no Python left to trace new ones.
        for training in (False, True):
            call.get_concrete_function(_input_specs(), training=training)
        self.__call__ = call

    def serving_signature(self):
        """`serving_default`: the three inputs as named tensors, a flat dict of outputs."""
        call = self.__call__

        @tf.function(input_signature=list(_input_specs().values()), autograph=False)
        def serve(input_word_ids, input_mask, input_type_ids):
            outputs = call(
                {"input_word_ids": input_word_ids, "input_mask": input_mask, "input_type_ids": input_type_ids}
            )
            flat = {key: outputs[key] for key in ("pooled_output", "sequence_output", "default")}
            flat.update({f"encoder_outputs_{i}": x for i, x in enumerate(outputs["encoder_outputs"])})
            return flat

        return serve


def export_encoder(encoder, export_dir, vocab_file=None, do_lower_case=None, overwrite=False):
    """Writes `encoder` to `export_dir` as a SavedModel with TF Hub's BERT encoder interface.

    Its assets carry bert_config.json and, when given, vocab.txt (and `do_lower_case`). The
    export is written under a temporary name and renamed when complete (`ExportWriter`).

    Args:
        encoder: A BertEncoder with its weights (any dtype policy: the outputs are float32).
        export_dir: The directory to write.
        vocab_file: The path of the vocab.txt to carry, or None for none.
        do_lower_case: The casing to carry (a bool variable), or None for none.
        overwrite: Whether an existing export at `export_dir` may be replaced.

    Returns:
        `export_dir`.

    Raises:
        FileExistsError: `export_dir` cannot be written (`check_export_dir`): an existing export
            without `overwrite`, or something other than an export.
        ValueError: The folder that holds `export_dir` cannot take the staged export.
    """
    with ExportWriter(export_dir, overwrite) as writer:
        root = EncoderSavedModel(encoder)
        root.attach_assets(writer, vocab_file, do_lower_case, encoder.bert_config())
        writer.save(root, {"serving_default": root.serving_signature()})
    return export_dir
