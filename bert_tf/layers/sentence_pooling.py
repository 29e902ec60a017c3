"""One vector per sequence from its token vectors, over the real tokens only: the pooling modes
of sentence-transformers' Pooling module (`1_Pooling/config.json`), and its Normalize step."""

import keras
from keras import ops

from bert_tf.errors import shown

# The modes, as sentence-transformers' `pooling_mode_<name>_tokens` keys name them (cls_token for cls).
POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len")
# torch.nn.functional.normalize's eps (sentence-transformers' Normalize): a zero vector stays zero.
NORMALIZE_EPSILON = 1e-12


def l2_normalize(vectors):
    """`vectors` (float `[..., hidden]`) divided by their L2 norm, at least NORMALIZE_EPSILON
    (torch.nn.functional.normalize's rule, so a zero vector stays zero). Each vector is first
    divided by its largest absolute value: squared as it is, a finite float32 vector above about
    1.8e19 overflows the sum to Inf and would come out zero."""
    scale = ops.max(ops.abs(vectors), axis=-1, keepdims=True)
    scale = ops.where(scale > 0, scale, ops.ones_like(scale))  # a zero vector: nothing to scale
    scaled = vectors / scale
    norm = ops.sqrt(ops.sum(ops.square(scaled), axis=-1, keepdims=True))
    return scaled / ops.maximum(norm, NORMALIZE_EPSILON / scale)


@keras.saving.register_keras_serializable(package="bert_tf")
class SentencePooling(keras.layers.Layer):
    """Pools a sequence's token vectors into one.

    Args:
        pooling: str. "mean" (the mean of the real tokens' vectors), "cls" (the first token's),
            "max" (each dimension's maximum over the real tokens) or "mean_sqrt_len" (their sum
            divided by the square root of their count). Defaults to "mean".
        normalize: bool. Whether to divide the result by its L2 norm (at least NORMALIZE_EPSILON).
            Defaults to False.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        sequence_output: float tensor `[batch, seq, hidden]`.
        input_mask: int tensor `[batch, seq]`, 1 for real tokens ([CLS] and [SEP] included, as
            sentence-transformers' attention mask), 0 for padding.

    Returns:
        float32 `[batch, hidden]`.

    Raises:
        ValueError: At construction, when `pooling` is not one of `POOLING_MODES`.
    """

    def __init__(self, pooling="mean", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLING_MODES:
            raise ValueError(f"{shown.pooling}={pooling!r} is not one of {', '.join(POOLING_MODES)}")
        self.pooling = pooling
        self.normalize = bool(normalize)

    def call(self, sequence_output, input_mask):
        vectors = ops.cast(sequence_output, "float32")  # [B, S, H]
        mask = ops.cast(input_mask, "float32")[:, :, None]  # [B, S, 1]
        if self.pooling == "cls":
            pooled = vectors[:, 0, :]
        elif self.pooling == "max":
            # Padding is never the maximum: its vectors become -1e9, as sentence-transformers sets them.
            pooled = ops.max(ops.where(mask > 0, vectors, -1e9), axis=1)
        else:
            total = ops.sum(vectors * mask, axis=1)  # [B, H]
            count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # [B, 1]
            pooled = total / (count if self.pooling == "mean" else ops.sqrt(count))
        return l2_normalize(pooled) if self.normalize else pooled

    def compute_output_shape(self, sequence_output_shape, input_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        return {**super().get_config(), "pooling": self.pooling, "normalize": self.normalize}
