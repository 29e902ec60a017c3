"""A dense classifier on every position: token classification (paper §5.3, NER)."""

import keras

from bert_tf.layers.classification_head import ClassificationHead


@keras.saving.register_keras_serializable(package="bert_tf")
class TokenClassificationHead(ClassificationHead):
    """Dropout, then a dense layer to `num_classes` logits, at every position of a sequence.

    The same weights as `ClassificationHead` (the kernel `[hidden, num_classes]`, stored by
    original-layout checkpoints as the top-level `output_weights` `[num_classes, hidden]` and
    `output_bias`), applied to each token's vector: the paper's NER model feeds each word's first
    sub-token's final hidden vector to one classification layer over the tags.

    Args:
        num_classes: int. The number of tags (logits per position; at least 1).
        dropout_rate: float. The dropout rate on the inputs. Defaults to 0.0 (no dropout).
        initializer_range: float. The standard deviation of the kernel's truncated normal
            initializer. Defaults to 0.02.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        inputs: float tensor `[batch, seq, hidden]` (usually `sequence_output`).
        training: whether dropout is active.

    Returns:
        float32 logits `[batch, seq, num_classes]`.

    Raises:
        ValueError: At construction, when `num_classes` is below 1.
    """
