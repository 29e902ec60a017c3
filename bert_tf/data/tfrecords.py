"""The original pre-training TFRecord format: names, types and fixed lengths of its features,
batched serialisation (TensorFlow's own proto encoder, in graph) and the parsing spec; and
interleaving TFRecord files record by record as raw bytes."""

import itertools
import struct

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


# A TFRecord on disk: uint64 length (little-endian), uint32 masked CRC of the length, the data,
# uint32 masked CRC of the data.
_LENGTH = struct.Struct("<Q")
_FRAMING_BYTES = 16


def framed_record_chunks(path, chunk_bytes=1 << 20):
    """The records of a local TFRecord file as they lie on disk (length, CRCs and data), for
    copying without decoding: yields lists of them, about `chunk_bytes` at a time. A truncated
    last record is an error that names the file."""
    with open(path, "rb") as f:
        buffer = b""
        while chunk := f.read(chunk_bytes):
            buffer += chunk
            view, records, position, size = memoryview(buffer), [], 0, len(buffer)
            while size - position >= _LENGTH.size:
                end = position + _FRAMING_BYTES + _LENGTH.unpack_from(buffer, position)[0]
                if end > size:
                    break
                records.append(view[position:end])
                position = end
            if records:
                yield records
            buffer = buffer[position:]
    if buffer:
        raise ValueError(f"{path} ends in a truncated TFRecord ({len(buffer)} bytes)")


def interleave_files(paths, output_path, cycle_length=16):
    """Writes the records of `paths` to `output_path` round robin, one record at a time, from at
    most `cycle_length` files open at once; a file that runs out passes its turn to the next file
    not yet opened. Records are copied as bytes (their CRCs stay valid); the Python work is per
    chunk, not per record (C-level zip over the chunks' record lists)."""
    waiting = iter(paths)

    def slot_chunks(path):
        while path is not None:
            yield from framed_record_chunks(path)
            path = next(waiting, None)

    # Each open slot: its chunk iterator and the records of its current chunk not yet written.
    slots = [[slot_chunks(p), []] for p in itertools.islice(waiting, cycle_length)]
    with open(output_path, "wb") as f:
        while True:
            for slot in slots:
                if not slot[1]:
                    slot[1] = next(slot[0], [])
            slots = [slot for slot in slots if slot[1]]
            if not slots:
                return
            # As many whole rounds as every slot can give from the chunks in hand.
            rounds = min(len(pending) for _, pending in slots)
            f.write(b"".join(itertools.chain.from_iterable(zip(*(pending[:rounds] for _, pending in slots), strict=True))))
            for slot in slots:
                del slot[1][:rounds]
