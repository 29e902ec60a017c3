"""SQuAD features -> the original run_squad.py's TFRecord file (its `FeatureWriter`): one
`tf.train.Example` of int64 lists per feature, unique_ids, input_ids, input_mask, segment_ids
and, for training, start_positions, end_positions, is_impossible, in that order.

The records are serialised straight to `tf.train.Example` bytes (the protobuf wire format
written by hand, varints cached) instead of building protobuf objects per feature: the same
records. `bert_tf.tasks.squad.inputs` reads them.
"""

import os
import uuid

import tensorflow as tf

from bert_tf.io_utils import owner_tag, remove_stale_temporaries


class _Varints(dict):
    """Protobuf varint bytes of an int; those of ids and lengths (< 2**21) are kept, as they
    repeat (unique ids do not: they would make the cache grow with the file)."""

    def __missing__(self, value):
        if not -(1 << 63) <= value < 1 << 64:
            raise ValueError(f"{value} does not fit in an int64 feature")
        number, out = value & 0xFFFFFFFFFFFFFFFF, bytearray()  # negatives: 64-bit two's complement
        while number > 0x7F:
            out.append(number & 0x7F | 0x80)
            number >>= 7
        out.append(number)
        if 0 <= value < 1 << 21:
            self[value] = bytes(out)
        return bytes(out)


def _small_ints(values):
    """Packed varints of a list of ints in [0, 128) (masks, segment ids: one byte each, their
    own value), made by bytes() in C; None for other values."""
    if type(values) is not list:
        return None
    try:
        packed = bytes(values)
    except (ValueError, TypeError):  # a value outside [0, 256) or not an int
        return None
    return packed if packed.isascii() else None


def _serialize(values_by_name, varints):
    """A `tf.train.Example` of int64 lists, as bytes: features in the given order, each a
    `Features.feature` map entry {1: key, 2: Feature{3: Int64List{1: packed varints}}} (each
    tag byte is field number << 3 | 2, "length-delimited", followed by the length)."""
    entries = []
    for name, values in values_by_name:
        packed = _small_ints(values)
        if packed is None:
            packed = b"".join(map(varints.__getitem__, values))
        int64_list = b"\x0a" + varints[len(packed)] + packed if packed else b""  # empty: no field
        feature = b"\x1a" + varints[len(int64_list)] + int64_list
        entry = b"\x0a" + varints[len(name)] + name + b"\x12" + varints[len(feature)] + feature
        entries.append(b"\x0a" + varints[len(entry)] + entry)
    features = b"".join(entries)
    return b"\x0a" + varints[len(features)] + features


def _record_values(feature, is_training):
    """(name, int list) pairs of one feature's record, in the original FeatureWriter's order."""
    values = [
        (b"unique_ids", (feature.unique_id,)),
        (b"input_ids", feature.input_ids),
        (b"input_mask", feature.input_mask),
        (b"segment_ids", feature.segment_ids),
    ]
    if is_training:
        values += [
            (b"start_positions", (feature.start_position,)),
            (b"end_positions", (feature.end_position,)),
            (b"is_impossible", (1 if feature.is_impossible else 0,)),
        ]
    return values


def write_features(features, path, is_training):
    """Writes `features` (any iterable, consumed once) to the TFRecord file `path` as the
    original FeatureWriter's `tf.train.Example`s; returns how many. The file appears complete or
    not at all: it is written under a temporary name in the same folder and renamed at the end
    (removed if anything fails; a killed writer's is removed by the next write)."""
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    base = os.path.basename(path)
    remove_stale_temporaries(directory or ".", base)  # a killed run's, named as atomic_write names them
    temporary = os.path.join(directory, f".{base}.{owner_tag()}.{uuid.uuid4().hex[:8]}.tmp")
    varints, count = _Varints(), 0
    try:
        with tf.io.TFRecordWriter(temporary) as writer:
            for feature in features:
                writer.write(_serialize(_record_values(feature, is_training), varints))
                count += 1
        tf.io.gfile.rename(temporary, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(temporary):
            tf.io.gfile.remove(temporary)
        raise
    return count
