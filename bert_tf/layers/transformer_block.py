"""One post-LayerNorm Transformer encoder block, as in the original release (paper §3)."""

import keras
from keras import ops

from bert_tf.layers.activations import get_activation
from bert_tf.layers.common import gather_rows, layer_norm, self_attention_output_spec, truncated_normal
from bert_tf.layers.multi_head_attention import MultiHeadSelfAttention


def _is_padding_mask(attention_mask):
    return attention_mask is not None and len(attention_mask.shape) == 2


@keras.saving.register_keras_serializable(package="bert_tf")
class TransformerBlock(keras.layers.Layer):
    """One post-LayerNorm Transformer encoder block, as in the original release.

    The computation: attention -> dropout -> LayerNorm(x + .) -> dense+act -> dense -> dropout ->
    LayerNorm(. + .).

    `skip_padding` (an attribute, False unless set; not part of the config): with a `[batch, seq]`
    padding mask, everything but the attention's scores (its query, key, value and output
    projections, the LayerNorms, the feed-forward layers) runs on the real tokens' rows alone,
    gathered flat, and the padding rows of the output are zeros instead of the values computed on
    padding tokens; the real tokens' rows are the same. The work then follows the tokens, not the
    batch's longest row. The number of real tokens is known only when the block runs, so it is for
    graphs that allow a data-dependent shape (TensorFlow without XLA, eager execution), not for
    XLA or `jax.jit`; see `bert_tf.models.padding_skipped`.

    Args:
        hidden_size: int. The width of the inputs and outputs; must be a multiple of
            `num_attention_heads`.
        num_attention_heads: int. The number of attention heads.
        intermediate_size: int. The width of the feed-forward (intermediate) dense layer.
        hidden_act: str. The feed-forward activation, one of `bert_tf.config.ACTIVATIONS`.
            Defaults to "gelu".
        hidden_dropout_prob: float. The dropout rate on the attention's and the feed-forward
            layers' outputs. Defaults to 0.1.
        attention_probs_dropout_prob: float. The dropout rate on the attention probabilities.
            Defaults to 0.1.
        initializer_range: float. The standard deviation of every kernel's truncated normal
            initializer. Defaults to 0.02.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `[batch, seq, hidden_size]`.
        attention_mask: optional `[batch, seq]` or `[batch, seq, seq]`, 1 = attend, 0 = masked.
        training: whether dropout is active.
        return_probs: also return the attention probabilities `[batch, heads, seq, seq]`
            (`[batch, heads, F, seq]` with query_positions).
        query_positions: optional int tensor `[batch, F]`: compute only these rows of the output
            (keys and values still come from every position). Exactly those rows of the full
            output, for less work where only some rows are needed (the pre-training heads).

    Returns:
        float32 `[batch, seq, hidden_size]` (`[batch, F, hidden_size]` with query_positions): the
        residual stream leaves a LayerNorm. With `return_probs`, the tuple `(output, probs)`.

    Raises:
        ValueError: At construction, when `hidden_act` is not one of `ACTIVATIONS`; when built
            (the attention layer is created then), when `hidden_size` is not a multiple of
            `num_attention_heads`.
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        get_activation(hidden_act)  # fail at construction on an unknown name
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.skip_padding = False

    def build(self, inputs_shape, attention_mask_shape=None):
        inputs_shape = tuple(inputs_shape)
        init = truncated_normal(self.initializer_range)
        self.attention = MultiHeadSelfAttention(
            self.hidden_size,
            self.num_attention_heads,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention.build(inputs_shape)
        self.attention_dropout = keras.layers.Dropout(
            self.hidden_dropout_prob, dtype=self.dtype_policy
        )
        self.attention_layer_norm = layer_norm("attention_layer_norm")
        self.attention_layer_norm.build(inputs_shape)
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_size,
            activation=get_activation(self.hidden_act),
            kernel_initializer=init,
            dtype=self.dtype_policy,
            name="intermediate_dense",
        )
        self.intermediate_dense.build(inputs_shape)
        self.output_dense = keras.layers.Dense(
            self.hidden_size, kernel_initializer=init, dtype=self.dtype_policy, name="output_dense"
        )
        self.output_dense.build(inputs_shape[:-1] + (self.intermediate_size,))
        self.output_dropout = keras.layers.Dropout(
            self.hidden_dropout_prob, dtype=self.dtype_policy
        )
        self.output_layer_norm = layer_norm("output_layer_norm")
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    def call(self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None):
        # The rows this block computes after attention: the real tokens alone when it skips the
        # padding (a [B, S] mask), else every row (of query_positions' [B, F] with them).
        skip = self.skip_padding and query_positions is None and _is_padding_mask(attention_mask)
        real_rows = ops.nonzero(ops.reshape(attention_mask, (-1,)))[0] if skip else None  # [R]
        # Asked for only when wanted: without the probabilities the attention can be fused.
        attention = self.attention(
            inputs,
            attention_mask=attention_mask,
            training=training,
            return_probs=return_probs,
            query_positions=query_positions,
            output_rows=real_rows,
        )
        attention_output, probs = attention if return_probs else (attention, None)
        residual = inputs if query_positions is None else gather_rows(inputs, query_positions)  # [B, F, hidden]
        shape = ops.shape(residual)
        # From here on, 2-D rows: [B*F, hidden] (or the R real ones), so that every Dense is one
        # product (on TensorFlow a Dense on [B, F, hidden] is a tensordot, a dozen shape ops).
        residual = ops.reshape(residual, (-1, self.hidden_size))
        if skip:
            residual = ops.take(residual, real_rows, axis=0)  # [R, hidden]
        else:
            attention_output = ops.reshape(attention_output, (-1, self.hidden_size))
        attention_output = self.attention_dropout(attention_output, training=training)
        # ops.add promotes a half-precision sum to float32 before the float32 LayerNorm.
        attention_output = self.attention_layer_norm(ops.add(attention_output, residual))

        intermediate = self.intermediate_dense(attention_output)  # [rows, intermediate_size]
        layer_output = self.output_dense(intermediate)
        layer_output = self.output_dropout(layer_output, training=training)
        layer_output = self.output_layer_norm(ops.add(layer_output, attention_output))  # [rows, hidden]
        if skip:  # padding rows come out zero
            layer_output = ops.scatter(real_rows[:, None], layer_output, (shape[0] * shape[1], self.hidden_size))
        layer_output = ops.reshape(layer_output, shape)
        if return_probs:
            return layer_output, probs
        return layer_output

    def compute_output_spec(
        self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None
    ):
        # The output leaves the float32 LayerNorm.
        return self_attention_output_spec(
            inputs, self.num_attention_heads, "float32", return_probs, query_positions
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
