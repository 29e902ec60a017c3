"""The masked-LM head of the original `get_masked_lm_output` (paper §3.1, Task #1)."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.common import gather_rows, layer_norm, truncated_normal


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Gathers the masked positions, then dense + activation + LayerNorm, then vocabulary logits.

    The output projection is the transposed word-embedding matrix (weights tied, as the
    original), plus a per-token output bias. Pass the `BertEmbeddings` layer whose table to
    tie as `embedding_layer`; it is a reference, not part of this layer's config (the model
    that owns both layers re-links them when it is rebuilt from its config). Without one, the
    head makes its own untied `[vocab_size, hidden_size]` output matrix.

    Args:
        vocab_size: int. The number of logits per prediction (the vocabulary's size).
        hidden_size: int. The width of `sequence_output` and of the transform's dense layer.
        hidden_act: str. The transform's activation, one of `bert_tf.config.ACTIVATIONS`.
            Defaults to "gelu".
        initializer_range: float. The standard deviation of the truncated normal initializer of
            the transform's kernel (and of the untied output matrix). Defaults to 0.02.
        embedding_layer: The `BertEmbeddings` layer whose word-embedding table is the output
            projection, or None (the default) for an untied matrix of the head's own.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        sequence_output: float tensor `[batch, seq, hidden_size]`.
        masked_lm_positions: int tensor `[batch, num_predictions]`, indices into `seq`; None when
            `sequence_output` holds just the rows to predict (`[batch, num_predictions, hidden]`).

    Returns:
        float32 logits of shape `[batch, num_predictions, vocab_size]`.

    Raises:
        ValueError: At construction, when `hidden_act` is not one of `ACTIVATIONS`.
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        hidden_act="gelu",
        initializer_range=0.02,
        embedding_layer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        get_activation(hidden_act)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.embedding_layer = embedding_layer

    def build(self, sequence_output_shape, masked_lm_positions_shape=None):
        self.transform_dense = keras.layers.Dense(
            self.hidden_size,
            activation=get_activation(self.hidden_act),
            kernel_initializer=truncated_normal(self.initializer_range),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.transform_dense.build((None, None, self.hidden_size))
        self.transform_layer_norm = layer_norm("transform_layer_norm")
        self.transform_layer_norm.build((None, None, self.hidden_size))
        if self.embedding_layer is None:
            self.output_embeddings = self.add_weight(
                name="output_embeddings",
                shape=(self.vocab_size, self.hidden_size),
                initializer=truncated_normal(self.initializer_range),
            )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros"
        )
        self.built = True

    @property
    def embedding_table(self):
        """The output projection's matrix `[vocab_size, hidden_size]`: the tied word embeddings, or the
        head's own.
        """
        if self.embedding_layer is not None:
            return self.embedding_layer.embedding_table
        return self.output_embeddings

    def call(self, sequence_output, masked_lm_positions=None):
        x = sequence_output  # [B, P, hidden]
        if masked_lm_positions is not None:
            x = gather_rows(sequence_output, masked_lm_positions)
        x = self.transform_dense(x)
        x = self.transform_layer_norm(x)
        table = ops.cast(self.embedding_table, self.compute_dtype)  # [V, hidden]
        logits = ops.matmul(ops.cast(x, self.compute_dtype), ops.transpose(table))  # [B, P, V]
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, masked_lm_positions_shape=None):
        rows = sequence_output_shape if masked_lm_positions_shape is None else masked_lm_positions_shape
        return (rows[0], rows[1], self.vocab_size)

    def compute_output_spec(self, sequence_output, masked_lm_positions=None):
        positions_shape = None if masked_lm_positions is None else masked_lm_positions.shape
        shape = self.compute_output_shape(sequence_output.shape, positions_shape)
        return keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
        )
        return config
