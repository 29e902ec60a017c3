"""Batches cut to their longest sequence, so that the work follows the text and not the padding
(TensorFlow).

Packing pads every row to max_seq_length, as the original did for the TPU's fixed shapes. Real
sentences are far shorter: a batch is cut to its longest row instead, rounded up to a multiple of
`bucket` so that only max_seq_length / bucket shapes ever occur (XLA and TPUs compile one program
per shape). Rows keep their real tokens first and padding last, so cutting drops padding only;
a model whose attention masks the padding computes the same values on the real tokens.
"""

import tensorflow as tf


def check_length_bucket(length_bucket):
    """`length_bucket` if it is a positive integer (the one check of the fine-tuning batches',
    the exports' and `bert_tf.data.lengths`' bucket); a ValueError naming the setting otherwise."""
    if isinstance(length_bucket, bool) or not isinstance(length_bucket, int) or length_bucket < 1:
        raise ValueError(f"length_bucket={length_bucket} must be a positive integer")
    return length_bucket


def bucketed_length(input_mask, bucket):
    """int32 scalar: the longest row of `input_mask` (`[..., seq]`, 1 on real tokens, which come
    first) rounded up to a multiple of `bucket`, at least `bucket` and at most `seq`."""
    check_length_bucket(bucket)
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(input_mask, tf.int32), axis=-1))
    rounded = tf.maximum((longest + bucket - 1) // bucket * bucket, bucket)
    return tf.minimum(rounded, tf.shape(input_mask)[-1])


def cut_padding(batch, bucket, keys, mask_key="input_mask"):
    """`batch` (a dict of tensors) with the tensors named in `keys` cut on their last axis to
    `bucketed_length(batch[mask_key], bucket)`; the other entries unchanged. bucket None: the
    batch as it is (fixed shapes)."""
    if bucket is None:
        return batch
    length = bucketed_length(batch[mask_key], bucket)
    return {k: (v[..., :length] if k in keys else v) for k, v in batch.items()}
