"""The original pre-training TFRecord format: names, types and fixed lengths of its features,
batched serialisation (TensorFlow's own proto encoder, in graph) and the parsing spec;
interleaving TFRecord files record by record as raw bytes; and checking files before training."""

import itertools
import os
import struct

import tensorflow as tf

INT_FEATURES_SEQ = ("input_ids", "input_mask", "segment_ids")
INT_FEATURES_PRED = ("masked_lm_positions", "masked_lm_ids")
FEATURE_ORDER = (*INT_FEATURES_SEQ, *INT_FEATURES_PRED, "masked_lm_weights", "next_sentence_labels")


def pretraining_feature_spec(seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of the original's pre-training records.

    Args:
        seq_length: The length of the token features (max_seq_length).
        max_predictions_per_seq: The length of the masked-LM features.

    Returns:
        A dict: feature name -> `tf.io.FixedLenFeature`: `input_ids`, `input_mask`, `segment_ids`
        int64 `[seq_length]`; `masked_lm_positions`, `masked_lm_ids` int64
        `[max_predictions_per_seq]`; `masked_lm_weights` float32 `[max_predictions_per_seq]`;
        `next_sentence_labels` int64 `[1]`.
    """
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in INT_FEATURES_SEQ}
    spec.update({name: tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64) for name in INT_FEATURES_PRED})
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def _encode(message_type, fields, values, sizes):
    return tf.io.encode_proto(sizes=sizes, values=values, field_names=fields, message_type=message_type)


@tf.function(autograph=False)
def serialize_examples(features):
    """Serialises pre-training instances as the original's `tf.train.Example`s, in graph.

    The protos are built bottom-up with `tf.io.encode_proto` (TensorFlow's own encoder).

    Args:
        features: A dict with the names of FEATURE_ORDER, each an array of shape `[n, length]`:
            int64, except float32 `masked_lm_weights`.

    Returns:
        A string tensor of shape `[n]`: the serialised `tf.train.Example`s.
    """
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
    features_msg = _encode(
        "tensorflow.Features", ["feature"], [tf.stack(entries, axis=1)], tf.fill([n, 1], len(entries))
    )
    return _encode("tensorflow.Example", ["features"], [features_msg[:, None]], tf.ones([n, 1], tf.int32))


# A TFRecord on disk: uint64 length (little-endian), uint32 masked CRC of the length, the data,
# uint32 masked CRC of the data.
_LENGTH = struct.Struct("<Q")
_FRAMING_BYTES = 16


def framed_record_chunks(path, chunk_bytes=1 << 20):
    """Reads the records of a local TFRecord file as they lie on disk, for copying without decoding.

    Args:
        path: A local TFRecord file.
        chunk_bytes: How many bytes to read at a time.

    Yields:
        Lists of records, each a `memoryview` of its framing (length, CRCs) and data, about
        `chunk_bytes` at a time.

    Raises:
        ValueError: The file's last record is truncated; the message names the file.
    """
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
    """Interleaves the records of TFRecord files into one file, round robin, one record at a time.

    At most `cycle_length` files are open at once; a file that runs out passes its turn to the
    next file not yet opened. Records are copied as bytes (their CRCs stay valid); the Python
    work is per chunk, not per record (C-level zip over the chunks' record lists).

    Args:
        paths: The local TFRecord files to read, in order.
        output_path: The file to write.
        cycle_length: The most files read at once.

    Raises:
        ValueError: One of `paths` ends in a truncated record.
    """
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
            f.write(
                b"".join(itertools.chain.from_iterable(zip(*(pending[:rounds] for _, pending in slots), strict=True)))
            )
            for slot in slots:
                del slot[1][:rounds]


# ---------------------------------------------------------------------------------------------
# Checks of pre-training files, made before training: a wrong file fails in a second with its
# name instead of after training started, deep in a graph traceback.


def _first_record(path):
    """The first record of `path` as bytes (None for an empty file), or ValueError naming it."""
    try:
        for record in tf.data.TFRecordDataset(path).take(1):
            return record.numpy()
    except tf.errors.DataLossError:
        raise ValueError(f"{path} is not a TFRecord file (or its first record is corrupted)") from None
    except tf.errors.OpError as e:
        raise ValueError(f"{path} cannot be read: {e.message.strip().splitlines()[-1]}") from None
    if tf.io.gfile.stat(path).length:
        raise ValueError(f"{path} is not a TFRecord file (or is truncated inside its first record)")
    return None


def check_pretraining_file(path, seq_length, max_predictions_per_seq, vocab_size):
    """Checks, before training, that a file holds the original's pre-training examples.

    Only the first record is read; `bert_tf.data.pretraining.pipeline.pretraining_dataset`
    checks every record's lengths and ids while reading.

    Args:
        path: The TFRecord file.
        seq_length: The expected length of `input_ids` (max_seq_length).
        max_predictions_per_seq: The expected length of `masked_lm_positions`.
        vocab_size: The vocabulary's size: token ids must be in `[0, vocab_size)`.

    Raises:
        ValueError: The file cannot be read, is not a TFRecord file, has no records, or its first
            record is not a `tf.train.Example` with every feature of FEATURE_ORDER, these lengths
            and token ids in range. The message names `path`.
    """
    record = _first_record(path)
    if record is None:
        raise ValueError(f"{path} has no records")
    try:
        example = tf.train.Example.FromString(record).features.feature
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise ValueError(f"{path} holds records that are not tf.train.Example protos") from None
    for name in FEATURE_ORDER:
        if name not in example:
            raise ValueError(f"{path} has no '{name}' feature: not pre-training data")
    for name, flag, expected in (
        ("input_ids", "max_seq_length", seq_length),
        ("masked_lm_positions", "max_predictions_per_seq", max_predictions_per_seq),
    ):
        length = len(example[name].int64_list.value)
        if length != expected:
            raise ValueError(f"{path} has {name} of length {length}, but --{flag}={expected}")
    ids = [*example["input_ids"].int64_list.value, *example["masked_lm_ids"].int64_list.value]
    if min(ids, default=0) < 0 or max(ids, default=0) >= vocab_size:
        bad = max(ids) if max(ids) >= vocab_size else min(ids)
        raise ValueError(
            f"{path} has token id {bad}, but vocab_size={vocab_size}: the data was made with another vocab"
        )


def truncated_at(path):
    """Finds where a local TFRecord file's last record is cut short, reading only the length fields.

    Args:
        path: A local TFRecord file.

    Returns:
        The byte offset of the record cut short, or None when the records end where the file
        does.
    """
    with open(path, "rb", buffering=0) as f:
        size, position = os.fstat(f.fileno()).st_size, 0
        while position < size:
            f.seek(position)
            header = f.read(_LENGTH.size)
            if len(header) < _LENGTH.size:
                return position
            end = position + _FRAMING_BYTES + _LENGTH.unpack(header)[0]
            if end > size:
                return position
            position = end
    return None


def read_error_message(error, files):
    """Describes in one line a TensorFlow error raised while reading pre-training files.

    Args:
        error: The exception (a `tf.errors.OpError` or another).
        files: The files that were being read.

    Returns:
        One line: the text of the pipeline's failed check (a record of other lengths, a token
        id out of range), or the local file found truncated, or which files one is corrupted
        among, or else the error's first meaningful line (its type's name if it has none).
    """
    text = error.message if isinstance(error, tf.errors.OpError) else str(error)
    if "assertion failed: [" in text:  # pipelines' checks name the file themselves
        return text.split("assertion failed: [", 1)[1].split("]\n", 1)[0].rstrip("]").replace('\\"', '"')
    if isinstance(error, tf.errors.DataLossError):
        for path in files:
            if "://" not in path and os.path.isfile(path):
                offset = truncated_at(path)
                if offset is not None:
                    return f"{path} is truncated: its record at byte {offset} is cut short"
        lines = [line.strip() for line in text.splitlines()]
        detail = next((line for line in lines if "record at" in line), lines[-1] if lines else "")
        return f"one of {', '.join(files)} is corrupted: {detail}"
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith(("[[", "File ", "Detected at", "Graph execution"))
    ]
    return lines[0] if lines else type(error).__name__
