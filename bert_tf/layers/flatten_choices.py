"""Multiple-choice inputs folded into the batch, so the encoder reads each choice as a sequence."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert_tf")
class FlattenChoices(keras.layers.Layer):
    """A dict of tensors `[batch, choices, seq]` -> the same dict of `[batch * choices, seq]`.

    Row `b * choices + c` of the output is choice `c` of example `b`; reshaping the per-row
    results to `[batch, choices]` undoes it. A layer (not a bare `ops.reshape` in a functional
    model) because `seq` is only known when it runs.
    """

    def call(self, inputs):
        return {name: ops.reshape(x, (-1, ops.shape(x)[-1])) for name, x in inputs.items()}

    def compute_output_spec(self, inputs):
        def flat(x):
            batch, choices, seq = x.shape
            rows = None if batch is None or choices is None else batch * choices
            return keras.KerasTensor((rows, seq), dtype=x.dtype)

        return {name: flat(x) for name, x in inputs.items()}
