"""Examples held as numpy arrays -> tf.data batches for the training loop (TensorFlow).

The batching every in-memory fine-tuning task shares, whatever its rows hold (token ids, text
to tokenize in the map that follows): training shuffles and repeats; evaluation and prediction
see every row once, padded up to whole global batches with rows of weight 0 (the original's
`PaddingInputExample` / `is_real_example`), in an order that gathering the replicas' outputs
restores. Training may group examples of similar length into batches (`group_by_length`), so
that cutting each batch to its longest row (`bert_tf.data.lengths`) drops most of the padding.
"""

import numpy as np
import tensorflow as tf

# A training column (float32 `[n]`): 1 for a labelled row, 0 for one that has only a teacher's
# targets (`bert_tf.training.distillation`); `array_dataset` gives it to training batches as `weight`.
LABELED = "labeled"

# Training columns of this prefix (a teacher's cached outputs: `bert_tf.training.distillation`)
# travel with their rows through the shuffle and the batching into a batch's labels (`carried`).
CARRIED = "teacher/"

# Group-by-length sorts windows of this many batches of the shuffled stream: wide enough that each
# batch is nearly uniform in length, narrow enough that the order stays random between windows.
GROUP_WINDOW_BATCHES = 50


def ordered_batches(ds, batch_size, input_context=None):
    """Batches evaluation or prediction rows so that the replicas' gathered outputs keep input order.

    `ds` is batched per replica, and each input pipeline keeps the slices of its own replicas, so
    that gathering every replica's outputs in replica order gives the rows in input order. Every
    batch is whole: drop_remainder drops nothing and gives the spec its batch size, the static
    shape a TPU needs (the loop's eval and predict steps are traced for the spec).

    Args:
        ds: A `tf.data.Dataset` of rows, already padded to a whole number of global batches
            (`batch_size` times the number of replicas).
        batch_size: The batch size per replica.
        input_context: The `tf.distribute.InputContext` of this input pipeline; None: one
            pipeline feeding one replica.

    Returns:
        A `tf.data.Dataset` of batches of `batch_size` rows.
    """
    ds = ds.batch(batch_size, drop_remainder=True)
    if input_context is None or input_context.num_replicas_in_sync == 1:
        return ds
    replicas = input_context.num_replicas_in_sync
    local = replicas // input_context.num_input_pipelines  # replicas fed by this pipeline, in order
    pipeline = input_context.input_pipeline_id
    return ds.enumerate().filter(lambda k, _: (k % replicas) // local == pipeline).map(lambda _, b: b)


def pad_rows(features, multiple):
    """Pads `features` with rows up to a multiple of `multiple`, marked by a weight of 0.

    Args:
        features: A dict of numpy arrays, one row per example (text arrays of dtype object).
        multiple: The row count to pad up to a multiple of.

    Returns:
        A dict with the same keys, each array with rows added: "" in text arrays, 0 in the
        others; plus `weight`, a float32 array that is 1 for the real rows and 0 for the added
        ones.
    """
    n = len(next(iter(features.values())))
    extra = -n % multiple

    def pad(v):
        shape = (extra,) + v.shape[1:]
        filler = np.full(shape, "", object) if v.dtype == object else np.zeros(shape, v.dtype)
        return np.concatenate([v, filler])

    out = {k: pad(v) for k, v in features.items()}
    out["weight"] = np.concatenate([np.ones(n, np.float32), np.zeros(extra, np.float32)])
    return out


def with_unlabelled(features, unlabelled):
    """Training rows with a teacher's targets alone added (`bert_tf.training.distillation`).

    Args:
        features: A dict of numpy arrays, one row per labelled example.
        unlabelled: The same dict (their labels placeholders) of the unlabelled examples.

    Returns:
        The rows of `features` then those of `unlabelled`, with the `LABELED` column: 1, then 0.
    """
    n, m = (len(next(iter(d.values()))) for d in (features, unlabelled))
    merged = {k: np.concatenate([features[k], unlabelled[k]]) for k in features}
    merged[LABELED] = np.concatenate([np.ones(n, np.float32), np.zeros(m, np.float32)])
    return merged


def carried(batch):
    """The `CARRIED` columns of a batch (a dict of its columns), for its labels."""
    return {name: value for name, value in batch.items() if name.startswith(CARRIED)}


def array_dataset(features, mode, batch_size, input_context=None, seed=None, skip_batches=0, lengths=None):
    """Batches examples held as numpy arrays for training, evaluation or prediction.

    In mode "train", the rows are sharded per input pipeline, shuffled with `seed` (reshuffled
    every epoch, reproducibly), repeated forever, batched with drop_remainder, and the first
    `skip_batches` batches skipped (a resumed run continues the same order). In modes "eval" and
    "predict", every row comes once, in order, padded with weight-0 rows to whole global batches,
    each input pipeline taking its replicas' slices (`ordered_batches`).

    Args:
        features: A dict of numpy arrays with one row per example.
        mode: "train", "eval" or "predict".
        batch_size: The batch size per replica.
        input_context: The `tf.distribute.InputContext` of this input pipeline; None: one
            pipeline feeding one replica.
        seed: The shuffle's seed ("train"); None: unseeded.
        skip_batches: How many batches to skip ("train").
        lengths: None, or for "train" each example's length (int `[n]`, e.g. its tokens):
            batches of examples of similar length (`group_by_length`), in an order as
            reproducible with the seed.

    Returns:
        A `tf.data.Dataset` of dicts with the keys of `features` plus `weight` (float32
        `[batch_size]`: 1 for a real row, 0 for padding; in training, the `LABELED` column where
        `features` has one, which it replaces).

    Raises:
        ValueError: `features` holds no example, or `mode` is not one of the three.
    """
    n = len(next(iter(features.values()))) if features else 0
    if not n:
        raise ValueError("no examples")
    if mode == "train":
        columns = {k: v for k, v in features.items() if k != LABELED}
        columns["weight"] = np.asarray(features[LABELED], np.float32) if LABELED in features else np.ones(n, np.float32)
        if lengths is not None:
            columns["length"] = np.asarray(lengths, np.int32)
        ds = tf.data.Dataset.from_tensor_slices(columns)
        if input_context is not None and input_context.num_input_pipelines > 1:
            ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        # A full shuffle: files are often sorted (by document, by length).
        if lengths is not None:
            ds = group_by_length(ds, n, batch_size, seed)
        else:
            ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True).repeat()
        ds = ds.batch(batch_size, drop_remainder=True)
        return ds.skip(skip_batches) if skip_batches else ds
    if mode in ("eval", "predict"):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        padded = pad_rows(features, batch_size * replicas)
        return ordered_batches(tf.data.Dataset.from_tensor_slices(padded), batch_size, input_context)
    raise ValueError(f"mode {mode!r} is not train, eval or predict")


def group_by_length(ds, n, batch_size, seed=None):
    """Orders the examples of `ds` so that consecutive `batch_size` of them have similar lengths.

    Each epoch is shuffled (with `seed`, reshuffled every epoch), cut into windows of
    GROUP_WINDOW_BATCHES batches, each window sorted by length (ties in shuffled order), cut into
    batches, and those batches shuffled within the window (seeded by `seed` and the window's
    number). Every example appears once per epoch; the stream is the same on every run with the
    same seed, so skipping batches resumes it exactly. Only the batches that straddle an epoch's
    end mix lengths.

    Args:
        ds: A `tf.data.Dataset` of dicts, each with an int32 `length`.
        n: The number of examples in `ds`.
        batch_size: The batch size the order is made for.
        seed: The shuffles' seed; None: unseeded epoch shuffles (the windows' batch shuffles
            then use 0).

    Returns:
        An endless `tf.data.Dataset` of single examples (not batched), without their `length`.
    """
    window = batch_size * GROUP_WINDOW_BATCHES
    ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True).batch(window).repeat().enumerate()

    def sort_window(number, rows):
        order = tf.argsort(rows.pop("length"), stable=True)  # [window] (the epoch's last: fewer)
        full = tf.size(order) // batch_size
        batches = tf.reshape(order[: full * batch_size], [full, batch_size])
        shuffled = tf.random.experimental.stateless_shuffle(
            tf.range(full), seed=tf.stack([tf.cast(seed or 0, tf.int64), number])
        )
        # A last part batch of the epoch stays last: it joins the next epoch's first examples.
        order = tf.concat([tf.reshape(tf.gather(batches, shuffled), [-1]), order[full * batch_size :]], 0)
        return tf.data.Dataset.from_tensor_slices({k: tf.gather(v, order) for k, v in rows.items()})

    return ds.flat_map(sort_window)


def pad_positions(values, seq_length, constant=0):
    """Pads per-position values of a batch cut to its length back to `seq_length` positions.

    Per-token outputs of batches of different lengths then gather and concatenate as fixed
    padding's do.

    Args:
        values: A tensor of shape `[batch, seq, ...]`, one entry per position of a batch cut to
            `seq` (see `bert_tf.data.lengths.cut_padding`).
        seq_length: The full length, at least `seq`.
        constant: The value of the added positions.

    Returns:
        A tensor of shape `[batch, seq_length, ...]` (static in its second axis), `values`
        followed by `constant`.
    """
    extra = seq_length - tf.shape(values)[1]
    paddings = tf.concat([[[0, 0], [0, extra]], tf.zeros([tf.rank(values) - 2, 2], tf.int32)], 0)
    return tf.ensure_shape(tf.pad(values, paddings, constant_values=constant), [None, seq_length, *values.shape[2:]])
