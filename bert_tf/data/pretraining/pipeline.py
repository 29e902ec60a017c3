"""tf.data input pipelines over the original pre-training TFRecords, and dynamic masking."""

import dataclasses

import tensorflow as tf

from bert_tf.data import tfrecords
from bert_tf.data.pretraining.instances import check_replacement_split
from bert_tf.io_utils import expand_patterns


@dataclasses.dataclass(frozen=True)
class DynamicMasking:
    """Settings of dynamic masking: masks drawn afresh every time a record is read (RoBERTa-style).

    The original's rules apply: num_to_predict = min(max_predictions, max(1, round(len *
    masked_lm_prob))), never [CLS]/[SEP], 80% [MASK] / 10% unchanged / 10% random id, optionally
    whole words. `remask` applies them to a batch; `pretraining_dataset` takes them as its
    `dynamic_masking`.

    Args:
        cls_id: The id of [CLS].
        sep_id: The id of [SEP].
        mask_id: The id of [MASK].
        vocab_size: The vocabulary's size (random ids are drawn below it).
        masked_lm_prob: The share of a record's tokens to predict.
        continuation_ids: The ids of "##" pieces, to mask whole words; None: single tokens.
        mask_token_prob: The share of the chosen tokens replaced by [MASK].
        random_token_prob: The share of the chosen tokens replaced by a random id (the rest keep
            their id). With `mask_token_prob`, another split than 80/10/10 (the paper's Table 8).

    Raises:
        ValueError: `mask_token_prob` or `random_token_prob` is outside [0, 1], or their sum is
            above 1.
    """

    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int
    masked_lm_prob: float = 0.15
    continuation_ids: tuple | None = None
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1

    def __post_init__(self):
        check_replacement_split(self.mask_token_prob, self.random_token_prob)

    @classmethod
    def from_vocab(cls, vocab, whole_word=False, **kwargs):
        """Creates the settings from a vocab.

        Args:
            vocab: Token -> id, as `bert_tf.tokenization.load_vocab` returns; it must hold [CLS],
                [SEP] and [MASK].
            whole_word: Whether to mask whole words (the vocab's "##" pieces become
                `continuation_ids`).
            **kwargs: The other fields (`masked_lm_prob`, `mask_token_prob`,
                `random_token_prob`).

        Returns:
            A `DynamicMasking`.
        """
        continuation = tuple(i for t, i in vocab.items() if t.startswith("##")) if whole_word else None
        return cls(vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"], len(vocab), continuation_ids=continuation, **kwargs)


def _check_lengths(features, filename, seq_length, max_predictions_per_seq):
    seq = features["input_ids"].row_lengths()
    pred = features["masked_lm_positions"].row_lengths()
    ok = tf.reduce_all(tf.equal(seq, seq_length)) & tf.reduce_all(tf.equal(pred, max_predictions_per_seq))
    message = tf.strings.format(
        "TFRecord {} has records with input_ids of length {} and masked_lm_positions of length {}, but "
        "the flags say max_seq_length={} and max_predictions_per_seq={}",
        (filename, seq, pred, seq_length, max_predictions_per_seq),
        summarize=3,
    )
    return tf.debugging.Assert(ok, [message])


def _check_ids(features, filenames, vocab_size):
    """Token ids outside the vocab stop the pipeline with the file's name: on an accelerator an
    embedding gather does not fail on them, it silently reads garbage."""
    ids = tf.concat([features["input_ids"], features["masked_lm_ids"]], axis=1)  # ragged [batch, (ids)]
    outside = (ids < 0) | (ids >= vocab_size)
    bad_rows = tf.reduce_any(outside, axis=1)
    message = tf.strings.format(
        "TFRecord {} has token ids {} outside [0, vocab_size={}): the data was made with another vocab",
        (
            tf.strings.reduce_join(tf.boolean_mask(filenames, bad_rows)[:1]),
            tf.boolean_mask(ids.flat_values, outside.flat_values),
            vocab_size,
        ),
        summarize=3,
    )
    return tf.debugging.Assert(~tf.reduce_any(bad_rows), [message])


def _parse(filename, records, seq_length, max_predictions_per_seq, vocab_size=None):
    fixed = tfrecords.pretraining_feature_spec(seq_length, max_predictions_per_seq)
    # Ragged first, so that a wrong length is reported with its file instead of a parse error.
    parsed = tf.io.parse_example(records, {name: tf.io.RaggedFeature(f.dtype) for name, f in fixed.items()})
    checks = [_check_lengths(parsed, filename[0], seq_length, max_predictions_per_seq)]
    if vocab_size is not None:
        checks.append(_check_ids(parsed, filename, vocab_size))
    with tf.control_dependencies(checks):
        dense = {
            name: tf.identity(tf.reshape(values.to_tensor(), [-1, fixed[name].shape[0]]))
            for name, values in parsed.items()
        }
    return {name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t for name, t in dense.items()}


def _model_inputs(features):
    """Original TFRecord names -> BertPretrainer inputs (x) and labels (y)."""
    x = {
        "input_word_ids": features["input_ids"],
        "input_mask": features["input_mask"],
        "input_type_ids": features["segment_ids"],
        "masked_lm_positions": features["masked_lm_positions"],
    }
    y = {
        "masked_lm_ids": features["masked_lm_ids"],
        "masked_lm_weights": features["masked_lm_weights"],
        "next_sentence_labels": features["next_sentence_labels"],
    }
    return x, y


def pretraining_dataset(
    file_patterns,
    batch_size,
    seq_length,
    max_predictions_per_seq,
    is_training,
    input_context=None,
    dynamic_masking=None,
    shuffle_buffer_size=1000,
    cycle_length=4,
    seed=None,
    skip_batches=0,
    vocab_size=None,
):
    """Batches `(x, y)` for `BertPretrainer` from the original pre-training TFRecords.

    With an `input_context` of several input pipelines, the files are sharded per pipeline.
    Training: the files are shuffled, repeated, read interleaved and the records shuffled in a
    buffer. Evaluation: files in order, records in order, once. Batches always drop their
    remainder (fixed shapes), and int64 ids become int32. A record whose lengths disagree with
    `seq_length` / `max_predictions_per_seq` stops the pipeline with an error naming its file
    and both lengths.

    Args:
        file_patterns: A comma-separated string, or a list, of files and glob patterns.
        batch_size: The records in each batch the dataset yields: under a tf.distribute
            strategy, the per-replica batch (divide the global batch by
            `input_context.num_replicas_in_sync` beforehand, or use
            `input_context.get_per_replica_batch_size`).
        seq_length: The records' token length (max_seq_length).
        max_predictions_per_seq: The records' masked-LM length.
        is_training: Whether to read for training (shuffled, repeated) or evaluation.
        input_context: The `tf.distribute.InputContext` of this input pipeline; None: one
            pipeline.
        dynamic_masking: A `DynamicMasking` to draw new masks for every batch (`remask`); None:
            the records' own masks.
        shuffle_buffer_size: The records' shuffle buffer (training).
        cycle_length: How many files are read at once (training).
        seed: Makes the training order (and the dynamic masks) reproducible; None: unseeded.
        skip_batches: Batches to skip, before parsing (so cheaply): with a `seed`, continues the
            order where a run that consumed that many batches stopped.
        vocab_size: With it, a token id outside [0, vocab_size) stops the pipeline naming its
            file; None: ids are not checked.

    Returns:
        A `tf.data.Dataset` of `(x, y)`: x holds `input_word_ids`, `input_mask` and
        `input_type_ids` (int32 `[batch_size, seq_length]`) and `masked_lm_positions` (int32
        `[batch_size, max_predictions_per_seq]`); y holds `masked_lm_ids` (int32) and
        `masked_lm_weights` (float32), both `[batch_size, max_predictions_per_seq]`, and
        `next_sentence_labels` (int32 `[batch_size, 1]`).

    Raises:
        FileNotFoundError: A pattern matches no file.
        ValueError: A pattern matches a directory, or there are fewer files than input
            pipelines.
    """
    if isinstance(file_patterns, str):
        files = expand_patterns(file_patterns)
    else:
        files = [f for pattern in file_patterns for f in expand_patterns(pattern)]
    ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        if len(files) < input_context.num_input_pipelines:
            raise ValueError(
                f"{len(files)} input file(s) cannot be split over {input_context.num_input_pipelines} input "
                "pipelines: write at least one file per worker"
            )
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)

    def read(filename):
        return tf.data.TFRecordDataset(filename).map(lambda r: (filename, r))

    if is_training:
        ds = ds.shuffle(len(files), seed=seed).repeat()
        ds = ds.interleave(
            read,
            cycle_length=min(cycle_length, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=seed is not None,
        )
        ds = ds.shuffle(shuffle_buffer_size, seed=seed)
    else:
        ds = ds.flat_map(read)
    ds = ds.batch(batch_size, drop_remainder=True)
    if skip_batches:
        ds = ds.skip(skip_batches)
    ds = ds.map(
        lambda f, r: _parse(f, r, seq_length, max_predictions_per_seq, vocab_size), num_parallel_calls=tf.data.AUTOTUNE
    )
    if dynamic_masking is not None:
        ds = ds.map(lambda f: remask(f, dynamic_masking, seed=seed), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.map(_model_inputs).prefetch(tf.data.AUTOTUNE)


# ---------------------------------------------------------------------------------------------
# Dynamic masking


def unmask(features):
    """Restores the token ids before masking: `masked_lm_ids` put back at `masked_lm_positions`.

    Args:
        features: A batch of parsed records (int32 features as `pretraining_dataset` parses
            them, before they are renamed into `(x, y)`): `input_ids` `[batch, seq]`, and
            `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` `[batch, predictions]`
            (positions of weight 0 are padding).

    Returns:
        A tensor like `input_ids` (`[batch, seq]`): the unmasked token ids.
    """
    ids = features["input_ids"]
    real = features["masked_lm_weights"] > 0
    batch = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(features["masked_lm_positions"]))
    index = tf.stack([tf.boolean_mask(batch, real), tf.boolean_mask(features["masked_lm_positions"], real)], axis=1)
    return tf.tensor_scatter_nd_update(ids, index, tf.boolean_mask(features["masked_lm_ids"], real))


def _uniform(shape, seed, salt):
    if seed is None:
        return tf.random.uniform(shape)
    return tf.random.stateless_uniform(shape, seed=[seed, salt])


def remask(features, config: DynamicMasking, seed=None):
    """Draws new masks for a batch of parsed records.

    The tokens are unmasked first (`unmask`), then masked again by `config`'s rules.
    Unseeded (the default), every call draws new masks; a `seed` makes them reproducible.

    Args:
        features: A batch of parsed records: int32 features as `pretraining_dataset` parses
            them (before they are renamed into `(x, y)`).
        config: The `DynamicMasking` settings.
        seed: An int seed; None: unseeded.

    Returns:
        `features` with new `input_ids`, `masked_lm_positions` (ascending, padded with 0),
        `masked_lm_ids` (0 at padding) and `masked_lm_weights` (float32: 1 for a prediction, 0
        for padding); the other features unchanged.
    """
    ids = unmask(features)
    B, S = tf.shape(ids)[0], tf.shape(ids)[1]
    P = features["masked_lm_positions"].shape[1]
    lengths = tf.reduce_sum(features["input_mask"], axis=1)
    candidate = (features["input_mask"] > 0) & (ids != config.cls_id) & (ids != config.sep_id)
    k = tf.minimum(P, tf.maximum(1, tf.cast(tf.round(tf.cast(lengths, tf.float64) * config.masked_lm_prob), tf.int32)))

    if config.continuation_ids is None:
        keys = tf.where(candidate, _uniform([B, S], seed, 1), 2.0)
        order = tf.argsort(keys, axis=1, stable=True)  # candidates first, in random order
        rank = tf.argsort(order, axis=1)
        count = tf.minimum(k, tf.reduce_sum(tf.cast(candidate, tf.int32), axis=1))
        chosen = candidate & (rank < count[:, None])
    else:
        chosen = _whole_words(ids, candidate, k, config, seed)

    # Positions ascending, padded with 0 (weight 0) up to P.
    position_keys = tf.where(chosen, tf.range(S)[None, :], S)
    positions = tf.sort(position_keys, axis=1)[:, :P]
    valid = positions < S
    positions = tf.where(valid, positions, 0)
    labels = tf.where(valid, tf.gather(ids, positions, batch_dims=1), 0)

    # One draw per token, cut as `instances._replacements` cuts it (0.8 and 0.9 by default).
    u = _uniform([B, P], seed, 2)
    random_ids = tf.cast(tf.math.floor(_uniform([B, P], seed, 3) * config.vocab_size), tf.int32)
    kept = tf.where(u < 1 - config.random_token_prob, labels, random_ids)
    replacement = tf.where(u < config.mask_token_prob, config.mask_id, kept)
    rows = tf.broadcast_to(tf.range(B)[:, None], [B, P])
    index = tf.stack([tf.boolean_mask(rows, valid), tf.boolean_mask(positions, valid)], axis=1)
    masked = tf.tensor_scatter_nd_update(ids, index, tf.boolean_mask(replacement, valid))
    return {
        **features,
        "input_ids": masked,
        "masked_lm_positions": positions,
        "masked_lm_ids": labels,
        "masked_lm_weights": tf.cast(valid, tf.float32),
    }


def _whole_words(ids, candidate, k, config, seed):
    """The original's whole-word rule: candidates grouped with the "##" pieces after them (in
    candidate order), words visited in random order, each taken whole if it still fits."""
    B, S = tf.shape(ids)[0], tf.shape(ids)[1]
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(config.continuation_ids or (-1,), tf.int32),
            tf.ones(len(config.continuation_ids or (-1,)), tf.int32),
        ),
        default_value=0,
    )
    continuation = tf.cast(table.lookup(ids), tf.bool)
    # A candidate starts a word unless it is a "##" piece after an earlier candidate.
    seen_before = tf.cumsum(tf.cast(candidate, tf.int32), axis=1, exclusive=True) > 0
    starts = candidate & ~(continuation & seen_before)
    word = tf.where(candidate, tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1, -1)  # [B, S]
    num_words = tf.reduce_max(word, axis=1) + 1
    word_len = tf.math.unsorted_segment_sum(
        tf.cast(candidate, tf.int32), tf.where(candidate, word + tf.range(B)[:, None] * S, B * S), B * S + 1
    )[: B * S]
    word_len = tf.reshape(word_len, [B, S])  # length of word w of row b at [b, w]
    keys = tf.where(tf.range(S)[None, :] < num_words[:, None], _uniform([B, S], seed, 4), 2.0)
    visit = tf.argsort(keys, axis=1, stable=True)  # words in random order, then padding

    def step(r, count, taken):
        w = visit[:, r]
        length = tf.gather(word_len, w, batch_dims=1)
        ok = (r < num_words) & (count < k) & (count + length <= k)
        taken = tf.tensor_scatter_nd_update(
            taken, tf.stack([tf.range(B), w], axis=1), tf.gather(taken, w, batch_dims=1) | ok
        )
        return r + 1, count + tf.where(ok, length, 0), taken

    _, _, taken = tf.while_loop(
        lambda r, *_: r < S, step, (0, tf.zeros([B], tf.int32), tf.zeros([B, S], tf.bool))
    )
    return candidate & tf.gather(taken, tf.maximum(word, 0), batch_dims=1)


