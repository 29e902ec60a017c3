"""Multi-head scaled dot-product self-attention (paper §3; Vaswani et al. 2017 §3.2).

Shape legend used in the comments:
    B = batch, F = "from" length (queries), T = "to" length (keys/values),
    N = number of heads, H = size of one head, N*H = hidden_size.
"""

import math

import keras
from keras import ops

from bert_tf.layers.common import gather_rows, self_attention_output_spec, truncated_normal

# The original adds this to the scores of masked positions instead of -inf (modeling.py),
# which keeps a fully masked row finite.
MASK_ADDER = -10000.0


def attention_adder(attention_mask, dtype="float32"):
    """Turns a 1/0 mask into the additive score bias, broadcastable to `[B, N, F, T]`.

    attention_mask: `[B, T]` (a padding mask, as `input_mask`) or `[B, F, T]`.
    """
    mask = ops.cast(attention_mask, dtype)
    if len(mask.shape) == 2:
        mask = mask[:, None, None, :]  # [B, 1, 1, T]
    elif len(mask.shape) == 3:
        mask = mask[:, None, :, :]  # [B, 1, F, T]
    else:
        raise ValueError(f"attention_mask must be [B, T] or [B, F, T], got shape {mask.shape}")
    return (1.0 - mask) * MASK_ADDER


@keras.saving.register_keras_serializable(package="bert_tf")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Self-attention with separate query/key/value projections, as the original checkpoints.

    Call arguments:
        inputs: float tensor `[B, F, hidden_size]`.
        attention_mask: optional int/float tensor `[B, T]` or `[B, F, T]`, 1 = attend, 0 = masked.
        training: whether dropout on the attention probabilities is active.
        return_probs: also return the attention probabilities `[B, N, F, T]`.
        query_positions: optional int tensor `[B, F]`: only these rows of `inputs` attend (to all
            of `inputs`); the output then has F rows, equal to those rows of the full output.

    Scores and softmax run in float32 whatever the compute dtype.
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size {hidden_size} is not a multiple of "
                f"num_attention_heads {num_attention_heads}"
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.head_size = hidden_size // num_attention_heads

    def build(self, inputs_shape, attention_mask_shape=None):
        def dense(name):
            layer = keras.layers.Dense(
                self.hidden_size,
                kernel_initializer=truncated_normal(self.initializer_range),
                dtype=self.dtype_policy,
                name=name,
            )
            layer.build(inputs_shape)
            return layer

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output_dense")
        self.dropout = keras.layers.Dropout(
            self.attention_probs_dropout_prob, dtype=self.dtype_policy
        )
        self.built = True

    def _split_heads(self, x, keys=False):
        # [B, S, N*H] -> [B, N, S, H], or [B, N, H, S] for the keys (one transpose, not two)
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, seq, self.num_attention_heads, self.head_size))
        return ops.transpose(x, (0, 2, 3, 1) if keys else (0, 2, 1, 3))

    def call(self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None):
        queries = inputs
        if query_positions is not None:
            queries = gather_rows(inputs, query_positions)
            if attention_mask is not None and len(attention_mask.shape) == 3:
                attention_mask = gather_rows(attention_mask, query_positions)
        q = self._split_heads(self.query(queries))  # [B, N, F, H]
        k = self._split_heads(self.key(inputs), keys=True)  # [B, N, H, T]
        v = self._split_heads(self.value(inputs))  # [B, N, T, H]

        scores = ops.matmul(q, k)  # [B, N, F, T]
        scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(self.head_size))
        if attention_mask is not None:
            scores = scores + attention_adder(attention_mask)
        probs = ops.softmax(scores, axis=-1)  # [B, N, F, T], float32
        dropped = self.dropout(ops.cast(probs, self.compute_dtype), training=training)

        context = ops.matmul(dropped, v)  # [B, N, F, H]
        context = ops.transpose(context, (0, 2, 1, 3))  # [B, F, N, H]
        batch, seq = ops.shape(context)[0], ops.shape(context)[1]
        context = ops.reshape(context, (batch, seq, self.hidden_size))  # [B, F, N*H]
        output = self.output_dense(context)
        if return_probs:
            return output, probs
        return output

    def compute_output_spec(
        self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None
    ):
        return self_attention_output_spec(
            inputs, self.num_attention_heads, self.compute_dtype, return_probs, query_positions
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
