"""SQuAD features in the original's TFRecords (`bert_tf.tasks.squad.feature_writer.write_features`) ->
tf.data batches of encoder inputs and answer positions (TensorFlow).

Each batch is cut to its longest feature rounded up to a bucket (`bert_tf.data.lengths`); answer
positions index the real tokens, which come first, so they stay as they are."""

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.data.batching import carried, group_by_length, ordered_batches
from bert_tf.data.lengths import cut_padding
from bert_tf.models.bert_encoder import INPUT_NAMES

# Training shuffles the serialised features through a buffer of at most this many (~1.5 KB each
# at max_seq_length 384, so up to ~150 MB; ~4.5 KB with a teacher's cached start and end logits,
# ~450 MB): all of SQuAD v1.1's ~88,000 training features. The
# features are written in file order (streamed, in bounded memory), where the original shuffled
# the examples once in memory and then mixed them with a buffer of 100.
SHUFFLE_BUFFER = 100000


@dataclasses.dataclass(frozen=True)
class SquadRecords:
    """A TFRecord file of `count` features of length `seq_length`; `is_training`: whether the
    records carry start_positions / end_positions / is_impossible. `transfer`: None, or the
    features of unlabelled questions (a prediction file's, without answers) that follow them in
    training at weight 0, learnt from a teacher's outputs alone (`bert_tf.training.distillation`)."""

    path: str
    count: int
    seq_length: int
    is_training: bool
    transfer: "SquadRecords" = None
    # Per-feature columns (numpy `[count, ...]`, in file order) that training batches carry into
    # their labels (`bert_tf.data.batching.CARRIED`): a teacher's cached outputs.
    carried: dict = dataclasses.field(default=None, compare=False, hash=False, repr=False)

    @property
    def files(self):
        """The record files, in the order their features come: these, then the transfer's."""
        return [self.path] + ([self.transfer.path] if self.transfer else [])

    @property
    def total(self):
        """How many features `files` hold: `count`, and the transfer's."""
        return self.count + (self.transfer.count if self.transfer else 0)


def feature_spec(seq_length, is_training, answers_optional=False):
    """`tf.io.parse_example` spec of the records (all int64, as the original's input_fn reads
    them): unique_ids, and input_ids, input_mask, segment_ids of `seq_length`; training adds
    start_positions, end_positions and is_impossible (0 where a record has none, with
    `answers_optional`: transfer text's features, written as a prediction file's)."""
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")}
    spec["unique_ids"] = tf.io.FixedLenFeature([], tf.int64)
    if is_training:
        default = 0 if answers_optional else None
        for name in ("start_positions", "end_positions", "is_impossible"):
            spec[name] = tf.io.FixedLenFeature([], tf.int64, default_value=default)
    return spec


def check_records(records: SquadRecords):
    """A ValueError naming the file when its first record is not a SQuAD feature of
    `seq_length` (e.g. a file written with another --max_seq_length)."""
    try:
        first = next(iter(tf.data.TFRecordDataset(records.path).take(1)), None)
        if first is None:
            raise ValueError("it holds no record")
        tf.io.parse_single_example(first, feature_spec(records.seq_length, records.is_training))
    except (tf.errors.OpError, ValueError) as e:
        message = getattr(e, "message", str(e)).splitlines()[0]
        raise ValueError(
            f"{records.path} is not a file of SQuAD features of length {records.seq_length}: {message}"
        ) from None


def _zero_record(seq_length, is_training):
    names = ["input_ids", "input_mask", "segment_ids"]
    feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=[0] * seq_length)) for name in names}
    scalars = ["unique_ids"] + (["start_positions", "end_positions", "is_impossible"] if is_training else [])
    feature.update({name: tf.train.Feature(int64_list=tf.train.Int64List(value=[0])) for name in scalars})
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def serialized(records: SquadRecords):
    """The serialised features of `records`, in order: `count` of its file, then `count` of its
    transfer's (a file's rows past its count are not read: the per-row columns follow these)."""
    ds = tf.data.TFRecordDataset(records.path).take(records.count)
    if records.transfer:
        ds = ds.concatenate(tf.data.TFRecordDataset(records.transfer.path).take(records.transfer.count))
    return ds


def record_lengths(records: SquadRecords, batch_size=1024):
    """int32 `[total]`: the real tokens (`input_mask`'s ones) of each feature, in file order (the
    transfer's after the others)."""
    spec = {"input_mask": tf.io.FixedLenFeature([records.seq_length], tf.int64)}
    ds = serialized(records).batch(batch_size)
    ds = ds.map(lambda r: tf.reduce_sum(tf.io.parse_example(r, spec)["input_mask"], -1))
    return np.concatenate([b.numpy() for b in ds] or [np.zeros(0, np.int64)]).astype(np.int32)


def squad_dataset(records: SquadRecords, mode, batch_size, input_context=None, seed=None, skip_batches=0,
                  length_bucket=None, lengths=None):
    """Batches `(x, y)`: x the encoder inputs (int32 `[batch_size, seq]`), y `start_positions`,
    `end_positions` (int32 `[batch_size]`; 0 without answers) and `weight`.

    batch_size is per replica. "train": records sharded per input pipeline, shuffled with `seed`
    (reshuffled every epoch, reproducibly), repeated, batched with drop_remainder, the first
    `skip_batches` skipped before parsing (cheap: a resumed run continues the same order).
    "eval"/"predict": every feature once, in file order, padded with rows of weight 0 to whole
    global batches, each pipeline taking its replicas' slices (`ordered_batches`).
    length_bucket: seq is each batch's longest feature rounded up to a multiple of it (None:
    records.seq_length). lengths: `record_lengths`, for training batches of features of similar
    length (`bert_tf.data.batching.group_by_length`, which then shuffles the whole file).
    """
    ds = serialized(records)
    pipelines = input_context.num_input_pipelines if input_context else 1
    replicas = input_context.num_replicas_in_sync if input_context else 1
    if mode == "train":
        columns = {"record": ds}
        if records.transfer:  # the transfer's features weigh 0: no answer to learn
            columns["weight"] = tf.data.Dataset.from_tensor_slices(
                np.repeat(np.array([1.0, 0.0], np.float32), [records.count, records.transfer.count]))
        if records.carried:
            columns.update({k: tf.data.Dataset.from_tensor_slices(v) for k, v in records.carried.items()})
        if lengths is not None:
            columns["length"] = tf.data.Dataset.from_tensor_slices(lengths)
        ds = tf.data.Dataset.zip(columns) if len(columns) > 1 else ds.map(lambda r: {"record": r})
        if pipelines > 1:
            ds = ds.shard(pipelines, input_context.input_pipeline_id)
        if lengths is not None:
            ds = group_by_length(ds, records.total, batch_size, seed)
        else:
            ds = ds.shuffle(min(records.total, SHUFFLE_BUFFER), seed=seed, reshuffle_each_iteration=True).repeat()
        ds = ds.map(lambda d: {"weight": 1.0, **d}).batch(batch_size, drop_remainder=True)
        if skip_batches:
            ds = ds.skip(skip_batches)
    elif mode in ("eval", "predict"):
        extra = -records.total % (batch_size * replicas)
        zero = _zero_record(records.seq_length, records.is_training)
        padding = tf.data.Dataset.from_tensors({"record": zero, "weight": 0.0}).repeat(extra)
        features = ds.map(lambda r: {"record": r, "weight": 1.0}).concatenate(padding)
        ds = ordered_batches(features, batch_size, input_context)
    else:
        raise ValueError(f"mode {mode!r} is not train, eval or predict")
    spec = feature_spec(records.seq_length, records.is_training, answers_optional=records.transfer is not None)

    def to_model(batch):
        f = {k: tf.cast(v, tf.int32) for k, v in tf.io.parse_example(batch["record"], spec).items()}
        x = {"input_word_ids": f["input_ids"], "input_mask": f["input_mask"], "input_type_ids": f["segment_ids"]}
        x = cut_padding(x, length_bucket, INPUT_NAMES)
        y = {"weight": tf.cast(batch["weight"], tf.float32), **carried(batch)}
        if records.is_training:
            y.update(start_positions=f["start_positions"], end_positions=f["end_positions"])
        return x, y

    return ds.map(to_model, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)


def __getattr__(name):
    """Names this module held before, as deprecated aliases (see `bert_tf/_deprecated.py`)."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
