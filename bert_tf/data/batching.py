"""Examples held as numpy arrays -> tf.data batches for the training loop (TensorFlow).

The batching every in-memory fine-tuning task shares, whatever its rows hold (token ids, text
to tokenize in the map that follows): training shuffles and repeats; evaluation and prediction
see every row once, padded up to whole global batches with rows of weight 0 (the original's
`PaddingInputExample` / `is_real_example`), in an order that gathering the replicas' outputs
restores.
"""

import numpy as np
import tensorflow as tf


def ordered_batches(ds, batch_size, input_context=None):
    """Evaluation and prediction batches: `ds` (already padded to a whole number of global
    batches) batched per replica, each input pipeline keeping the slices of its own replicas,
    so that gathering every replica's outputs in replica order gives the rows in input order."""
    ds = ds.batch(batch_size)
    if input_context is None or input_context.num_replicas_in_sync == 1:
        return ds
    replicas = input_context.num_replicas_in_sync
    local = replicas // input_context.num_input_pipelines  # replicas fed by this pipeline, in order
    pipeline = input_context.input_pipeline_id
    return ds.enumerate().filter(lambda k, _: (k % replicas) // local == pipeline).map(lambda _, b: b)


def pad_rows(features, multiple):
    """`features` with rows added up to a multiple of `multiple`: "" in text arrays, 0 in the
    others, and a float32 `weight` that is 1 for the real rows and 0 for the added ones."""
    n = len(next(iter(features.values())))
    extra = -n % multiple

    def pad(v):
        shape = (extra,) + v.shape[1:]
        filler = np.full(shape, "", object) if v.dtype == object else np.zeros(shape, v.dtype)
        return np.concatenate([v, filler])

    out = {k: pad(v) for k, v in features.items()}
    out["weight"] = np.concatenate([np.ones(n, np.float32), np.zeros(extra, np.float32)])
    return out


def array_dataset(features, mode, batch_size, input_context=None, seed=None, skip_batches=0):
    """Batches of `features` (a dict of numpy arrays with one row per example), each a dict with
    the same keys plus a float32 `weight` `[batch_size]`.

    batch_size: per replica. mode "train": rows sharded per input pipeline, shuffled with `seed`
    (reshuffled every epoch, reproducibly), repeated forever, batched with drop_remainder, the
    first `skip_batches` skipped (a resumed run continues the same order). "eval"/"predict": every
    row once, in order, padded with weight-0 rows to whole global batches, each input pipeline
    taking its replicas' slices (`ordered_batches`).
    """
    n = len(next(iter(features.values()))) if features else 0
    if not n:
        raise ValueError("no examples")
    if mode == "train":
        ds = tf.data.Dataset.from_tensor_slices(dict(features, weight=np.ones(n, np.float32)))
        if input_context is not None and input_context.num_input_pipelines > 1:
            ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        # A full shuffle: files are often sorted (by document, by length).
        ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True).repeat()
        ds = ds.batch(batch_size, drop_remainder=True)
        return ds.skip(skip_batches) if skip_batches else ds
    if mode in ("eval", "predict"):
        replicas = input_context.num_replicas_in_sync if input_context else 1
        padded = pad_rows(features, batch_size * replicas)
        return ordered_batches(tf.data.Dataset.from_tensor_slices(padded), batch_size, input_context)
    raise ValueError(f"mode {mode!r} is not train, eval or predict")
