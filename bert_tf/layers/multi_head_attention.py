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

    A position to attend (1) gets 0; a masked one (0) gets `MASK_ADDER` (-10000, the original's
    value, rather than -inf).

    Args:
        attention_mask: An int or float tensor, 1 = attend, 0 = masked: `[B, T]` (a padding mask,
            as `input_mask`) or `[B, F, T]`.
        dtype: The dtype of the result (and of the arithmetic). Defaults to "float32".

    Returns:
        A tensor of `dtype`: `[B, 1, 1, T]` for a `[B, T]` mask, `[B, 1, F, T]` for a
        `[B, F, T]` one.

    Raises:
        ValueError: `attention_mask` has another rank.
    """
    mask = ops.cast(attention_mask, dtype)
    if len(mask.shape) == 2:
        mask = mask[:, None, None, :]  # [B, 1, 1, T]
    elif len(mask.shape) == 3:
        mask = mask[:, None, :, :]  # [B, 1, F, T]
    else:
        raise ValueError(f"attention_mask must be [B, T] or [B, F, T], got shape {mask.shape}")
    return (1.0 - mask) * MASK_ADDER


def _fused_attention_bias(bias, batch, from_len, to_len, training):
    """(the bias, extra arguments) for `keras.ops.dot_product_attention` on this backend.

    Only JAX needs any. Its cuDNN fused kernel (GPU) takes a bias only with the scores' own last
    two lengths (F, T), and in training (the backward pass) only even ones: at such lengths the
    `[B, 1, 1, T]` padding bias is broadcast to `[B, 1, F, T]` (free: XLA fuses it into the
    addition) and the backend chooses; elsewhere (the pre-training head's 21 query rows, say)
    XLA's own ops are chosen here, rather than by Keras after the kernel refuses, which it logs
    with a traceback. On TPU Keras' fused kernel (splash attention) would drop an additive bias,
    the padding mask: XLA's ops there too.
    """
    if bias is None or keras.backend.backend() != "jax":
        return bias, {}
    on_tpu = keras.distribution.list_devices()[0].startswith("tpu")
    static = isinstance(from_len, int) and isinstance(to_len, int)  # symbolic while Keras infers shapes
    if on_tpu or not static or (training and (from_len % 2 or to_len % 2)):
        return bias, {"flash_attention": False}
    return ops.broadcast_to(bias, (batch, 1, from_len, to_len)), {}


@keras.saving.register_keras_serializable(package="bert_tf")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Self-attention with separate query/key/value projections, as the original checkpoints.

    Scores and softmax run in float32 whatever the compute dtype. Where no dropout falls on the
    probabilities (inference, or attention_probs_dropout_prob 0) and they are not asked for, the
    attention goes through `keras.ops.dot_product_attention` (the same additive mask, scale and
    float32 softmax), which keeps the heads in `[B, S, N, H]` (no transposes) and lets the JAX
    backend use a fused kernel; training with attention dropout takes the explicit path, the
    original's dropout on the probabilities.

    Args:
        hidden_size: int. The width of the inputs and outputs (N*H); must be a multiple of
            `num_attention_heads`.
        num_attention_heads: int. The number of heads N; each is `hidden_size // num_attention_heads`
            wide.
        attention_probs_dropout_prob: float. The dropout rate on the attention probabilities.
            Defaults to 0.1.
        initializer_range: float. The standard deviation of the projections' truncated normal
            initializer. Defaults to 0.02.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `[B, F, hidden_size]`.
        attention_mask: optional int/float tensor `[B, T]` or `[B, F, T]`, 1 = attend, 0 = masked.
        training: whether dropout on the attention probabilities is active.
        return_probs: also return the attention probabilities `[B, N, F, T]`.
        query_positions: optional int tensor `[B, F]`: only these rows of `inputs` attend (to all
            of `inputs`); the output then has F rows, equal to those rows of the full output.
        output_rows: optional int tensor `[R]`, indices into the `B*S` rows of `inputs` taken flat
            (without query_positions): the projections run on these rows alone and the output is
            them alone, `[R, hidden_size]`; the other rows must be masked out as keys (a block
            that skips the padding passes its real tokens' rows).

    Returns:
        The output in the compute dtype, `[B, F, hidden_size]` (`[R, hidden_size]` with
        `output_rows`); with `return_probs`, the tuple `(output, probs)`, probs float32 `[B, N, F, T]`.

    Raises:
        ValueError: At construction, when `hidden_size` is not a multiple of `num_attention_heads`.
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

    def call(self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None,
             output_rows=None):
        queries = inputs
        if query_positions is not None:
            queries = gather_rows(inputs, query_positions)
            if attention_mask is not None and len(attention_mask.shape) == 3:
                attention_mask = gather_rows(attention_mask, query_positions)
        # The projections run on 2-D rows: a Dense on [B, S, N*H] is a tensordot on TensorFlow,
        # a dozen shape ops around its product.
        batch, from_len, to_len = ops.shape(queries)[0], ops.shape(queries)[1], ops.shape(inputs)[1]
        rows = ops.reshape(inputs, (-1, self.hidden_size))  # [B*T, N*H]
        query_rows = rows if query_positions is None else ops.reshape(queries, (-1, self.hidden_size))
        heads = (self.num_attention_heads, self.head_size)
        if output_rows is None:
            q, k, v = self.query(query_rows), self.key(rows), self.value(rows)  # [B*F or B*T, N*H]
        else:  # projected on those rows alone, the others (padding, masked as keys) left zero
            taken, flat_shape = ops.take(rows, output_rows, axis=0), ops.shape(rows)
            q, k, v = (ops.scatter(output_rows[:, None], dense(taken), flat_shape)
                       for dense in (self.query, self.key, self.value))
        q = ops.reshape(q, (batch, from_len, *heads))  # [B, F, N, H]
        k = ops.reshape(k, (batch, to_len, *heads))  # [B, T, N, H]
        v = ops.reshape(v, (batch, to_len, *heads))  # [B, T, N, H]
        # The original's additive -10000 (not a boolean mask) keeps the outputs those of the explicit path.
        bias = None if attention_mask is None else attention_adder(attention_mask)  # [B, 1, 1 or F, T]
        scale = 1.0 / math.sqrt(self.head_size)

        probs = None
        if not return_probs and not (training and self.attention_probs_dropout_prob > 0):
            bias, options = _fused_attention_bias(bias, batch, from_len, to_len, training)
            context = ops.dot_product_attention(q, k, v, bias=bias, scale=scale, **options)  # [B, F, N, H]
        else:
            scores = ops.einsum("bfnh,btnh->bnft", q, k)  # [B, N, F, T]
            scores = ops.cast(scores, "float32") * scale
            if bias is not None:
                scores = scores + bias
            probs = ops.softmax(scores, axis=-1)  # [B, N, F, T], float32
            dropped = self.dropout(ops.cast(probs, self.compute_dtype), training=training)
            context = ops.einsum("bnft,btnh->bfnh", dropped, v)  # [B, F, N, H]
        context = ops.reshape(context, (-1, self.hidden_size))  # [B*F, N*H]
        if output_rows is not None:
            context = ops.take(context, output_rows, axis=0)  # [R, N*H]
        output = self.output_dense(context)
        if output_rows is None:
            output = ops.reshape(output, (batch, from_len, self.hidden_size))  # [B, F, N*H]
        if return_probs:
            return output, probs
        return output

    def compute_output_spec(
        self, inputs, attention_mask=None, training=None, return_probs=False, query_positions=None,
        output_rows=None,
    ):
        return self_attention_output_spec(
            inputs, self.num_attention_heads, self.compute_dtype, return_probs, query_positions, output_rows
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
