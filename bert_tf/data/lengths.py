"""Batches cut to their longest sequence, so that the work follows the text and not the padding
(TensorFlow).

Packing pads every row to max_seq_length, as the original did for the TPU's fixed shapes. Real
sentences are far shorter: a batch is cut to its longest row instead, rounded up to a multiple of
`bucket` so that only max_seq_length / bucket shapes ever occur (XLA and TPUs compile one program
per shape). Rows keep their real tokens first and padding last, so cutting drops padding only;
a model whose attention masks the padding computes the same values on the real tokens.
"""

import tensorflow as tf

from bert_tf.errors import shown


def check_length_bucket(length_bucket):
    """Checks that `length_bucket` is a positive integer.

    The one check of the fine-tuning batches', the exports' and this module's bucket.

    Args:
        length_bucket: The bucket to check.

    Returns:
        `length_bucket`, unchanged.

    Raises:
        ValueError: `length_bucket` is not a positive integer (a bool is not); the message names
            the setting.
    """
    if isinstance(length_bucket, bool) or not isinstance(length_bucket, int) or length_bucket < 1:
        raise ValueError(f"{shown.length_bucket}={length_bucket} must be a positive integer")
    return length_bucket


def bucketed_length(input_mask, bucket):
    """The length a batch is cut to: its longest row, rounded up to a multiple of `bucket`.

    Args:
        input_mask: An int or bool tensor of shape `[..., seq]`, 1 on real tokens, which come
            first in each row.
        bucket: A positive int.

    Returns:
        An int32 scalar tensor: the longest row's length rounded up to a multiple of `bucket`,
        at least `bucket` and at most `seq`.

    Raises:
        ValueError: `bucket` is not a positive integer.
    """
    check_length_bucket(bucket)
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=-1))
    rounded = tf.maximum((longest + bucket - 1) // bucket * bucket, bucket)
    return tf.minimum(rounded, tf.shape(input_mask)[-1])


def cut_padding(batch, bucket, keys, mask_key="input_mask"):
    """Cuts a batch's padding: the tensors named in `keys` to the batch's bucketed length.

    Args:
        batch: A dict of tensors.
        bucket: A positive int (see `bucketed_length`); None: no cut (fixed shapes).
        keys: The names of the tensors to cut on their last axis.
        mask_key: The name of the input mask the length is read from.

    Returns:
        `batch` with the tensors named in `keys` cut on their last axis to
        `bucketed_length(batch[mask_key], bucket)`, the other entries unchanged; with `bucket`
        None, `batch` itself.

    Raises:
        ValueError: `bucket` is neither None nor a positive integer.
    """
    if bucket is None:
        return batch
    length = bucketed_length(batch[mask_key], bucket)
    return {k: (v[..., :length] if k in keys else v) for k, v in batch.items()}
