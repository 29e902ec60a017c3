"""The original pre-training TFRecord format: names, types and fixed lengths of its features,
batched serialisation (TensorFlow's own proto encoder, in graph) and the parsing spec."""

import tensorflow as tf

INT_FEATURES_SEQ = ("input_ids", "input_mask", "segment_ids")
INT_FEATURES_PRED = ("masked_lm_positions", "masked_lm_ids")
FEATURE_ORDER = (*INT_FEATURES_SEQ, *INT_FEATURES_PRED, "masked_lm_weights", "next_sentence_labels")


def pretraining_feature_spec(seq_length, max_predictions_per_seq):
    """`tf.io.parse_example` spec of the original's records (int64 ids, float weights)."""
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in INT_FEATURES_SEQ}
    spec.update({name: tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64) for name in INT_FEATURES_PRED})
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def _encode(message_type, fields, values, sizes):
    return tf.io.encode_proto(sizes=sizes, values=values, field_names=fields, message_type=message_type)


@tf.function(autograph=False)
def serialize_examples(features):
    """Dict of `[n, length]` arrays (the names of FEATURE_ORDER; int64 except float32 weights)
    -> `[n]` serialised `tf.train.Example`s, built bottom-up with `tf.io.encode_proto`."""
    n = tf.shape(features["input_ids"])[0]
    entries = []
    for name in FEATURE_ORDER:
        values = features[name]
        is_float = values.dtype == tf.float32
        kind = ("tensorflow.FloatList", "float_list") if is_float else ("tensorflow.Int64List", "int64_list")
        as_list = _encode(kind[0], ["value"], [values], tf.fill([n, 1], tf.shape(values)[1]))
        feature = _encode("tensorflow.Feature", [kind[1]], [as_list[:, None]], tf.ones([n, 1], tf.int32))
        entries.append(
            _encode(
                "tensorflow.Features.FeatureEntry",
                ["key", "value"],
                [tf.fill([n, 1], name), feature[:, None]],
                tf.ones([n, 2], tf.int32),
            )
        )
    features_msg = _encode("tensorflow.Features", ["feature"], [tf.stack(entries, axis=1)], tf.fill([n, 1], len(entries)))
    return _encode("tensorflow.Example", ["features"], [features_msg[:, None]], tf.ones([n, 1], tf.int32))
