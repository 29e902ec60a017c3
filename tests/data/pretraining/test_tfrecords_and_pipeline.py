"""The TFRecord format crosses both ways with the original, and the tf.data pipeline."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import tfrecords
from bert_tf.data.pretraining import pipeline as pipelines

SEQ, PRED = 16, 4
CLS, SEP, MASK = 2, 3, 4

# The original run_pretraining.py's input_fn parses exactly this (int64 ids, float weights).
ORIGINAL_SPEC = {
    "input_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
    "input_mask": tf.io.FixedLenFeature([SEQ], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
    "masked_lm_positions": tf.io.FixedLenFeature([PRED], tf.int64),
    "masked_lm_ids": tf.io.FixedLenFeature([PRED], tf.int64),
    "masked_lm_weights": tf.io.FixedLenFeature([PRED], tf.float32),
    "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
}


def _records(n, seed=0, seq=SEQ, pred=PRED):
    """n records as the original writes them: a python tf.train.Example per instance."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        length = int(rng.integers(6, seq + 1))
        ids = [CLS, *rng.integers(10, 40, length - 3).tolist(), SEP, 30 + i % 5, SEP][:length]
        ids[-1] = SEP
        positions = sorted(rng.choice(np.arange(1, length - 1), size=2, replace=False).tolist())
        labels = [ids[p] for p in positions]
        for p in positions:
            ids[p] = MASK
        feature = {
            "input_ids": ids + [0] * (seq - length),
            "input_mask": [1] * length + [0] * (seq - length),
            "segment_ids": [0] * (length - 2) + [1, 1] + [0] * (seq - length),
            "masked_lm_positions": positions + [0] * (pred - 2),
            "masked_lm_ids": labels + [0] * (pred - 2),
            "next_sentence_labels": [i % 2],
        }
        f = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feature.items()}
        f["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 1.0] + [0.0] * (pred - 2)))
        out.append((feature, tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()))
    return out


def _write(path, records):
    with tf.io.TFRecordWriter(str(path)) as w:
        for _, record in records:
            w.write(record)
    return str(path)


def test_our_serialisation_parses_with_the_original_spec():
    records = _records(5)
    arrays = {
        name: np.array([f[name] for f, _ in records], np.int64) for name in ORIGINAL_SPEC if name != "masked_lm_weights"
    }
    arrays["masked_lm_weights"] = np.array([[1, 1, 0, 0]] * 5, np.float32)
    ours = tfrecords.serialize_examples(arrays).numpy()
    parsed = tf.io.parse_example(ours, ORIGINAL_SPEC)
    for name, values in arrays.items():
        np.testing.assert_array_equal(parsed[name].numpy(), values)
    example = tf.train.Example.FromString(ours[0])
    assert sorted(example.features.feature) == sorted(ORIGINAL_SPEC)
    assert example.features.feature["masked_lm_weights"].WhichOneof("kind") == "float_list"
    assert example.features.feature["input_ids"].WhichOneof("kind") == "int64_list"


def _write_records(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def _read_records(path):
    return [r.numpy() for r in tf.data.TFRecordDataset(str(path))]  # checks the CRCs too


def test_interleave_files_round_robin_with_turns_passed_on(tmp_path):
    files = {
        name: [f"{name}{i}".encode() * (1 + i) for i in range(n)]
        for name, n in (("a", 5), ("b", 2), ("c", 3), ("d", 0), ("e", 2))
    }
    paths = [_write_records(tmp_path / f"{name}.tfrecord", records) for name, records in files.items()]
    # The rule, restated: visit the open files in turn; one that runs out hands its turn to
    # the next unopened file at once; a turn with no file left is dropped.
    slots, waiting, expected = [list(files["a"]), list(files["b"])], [list(files[n]) for n in "cde"], []
    while slots:
        for k in range(len(slots)):
            while slots[k] is not None and not slots[k]:
                slots[k] = waiting.pop(0) if waiting else None
            if slots[k]:
                expected.append(slots[k].pop(0))
        slots = [s for s in slots if s is not None and (s or waiting)]
    assert expected[:6] == [b"a0", b"b0", b"a1a1", b"b1b1", b"a2a2a2", b"c0"]  # the rule means this
    tfrecords.interleave_files(paths, str(tmp_path / "out.tfrecord"), cycle_length=2)
    assert _read_records(tmp_path / "out.tfrecord") == expected


def test_framed_records_across_chunk_boundaries_and_truncation(tmp_path):
    records = [bytes(range(i % 256)) * (i % 7) for i in range(300)]
    path = _write_records(tmp_path / "r.tfrecord", records)
    for chunk_bytes in (5, 97, 1 << 20):
        framed = [bytes(r) for chunk in tfrecords.framed_record_chunks(path, chunk_bytes) for r in chunk]
        assert [f[12:-4] for f in framed] == records
    with open(path, "rb") as f:
        data = f.read()
    with open(tmp_path / "cut.tfrecord", "wb") as f:
        f.write(data[:-3])
    with pytest.raises(ValueError, match=r"cut.tfrecord ends in a truncated TFRecord"):
        list(tfrecords.framed_record_chunks(str(tmp_path / "cut.tfrecord")))


def test_eval_reads_original_records_in_order_as_int32(tmp_path):
    records = _records(10)
    a = _write(tmp_path / "a.tfrecord", records[:6])
    b = _write(tmp_path / "b.tfrecord", records[6:])
    ds = pipelines.pretraining_dataset(f"{a},{b}", 3, SEQ, PRED, is_training=False)
    batches = list(ds)
    assert len(batches) == 3  # 10 records, drop_remainder
    x, y = batches[0]
    assert x["input_word_ids"].dtype == tf.int32 and y["masked_lm_weights"].dtype == tf.float32
    got = np.concatenate([x["input_word_ids"].numpy() for x, _ in batches])
    np.testing.assert_array_equal(got, [f["input_ids"] for f, _ in records[:9]])
    labels = np.concatenate([y["next_sentence_labels"].numpy() for _, y in batches])
    assert labels.shape == (9, 1) and labels[:, 0].tolist() == [i % 2 for i in range(9)]


def test_training_shards_files_per_input_pipeline_and_repeats(tmp_path):
    files = [_write(tmp_path / f"{i}.tfrecord", _records(4, seed=i)) for i in range(4)]
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline, num_replicas_in_sync=2)
        ds = pipelines.pretraining_dataset(files, 2, SEQ, PRED, is_training=True, input_context=context, seed=7)
        ids = {tuple(x["input_word_ids"].numpy()[0]) for x, _ in ds.take(20)}  # repeats: 20 > 8 records
        seen.append(ids)
    assert seen[0] and seen[1] and not seen[0] & seen[1]  # disjoint halves of the files
    with pytest.raises(ValueError, match="4 input file"):
        pipelines.pretraining_dataset(files, 2, SEQ, PRED, True, tf.distribute.InputContext(8, 0, 8))


def test_a_length_mismatch_names_the_file_and_both_lengths(tmp_path):
    path = _write(tmp_path / "short.tfrecord", _records(4, seq=12))
    ds = pipelines.pretraining_dataset(path, 2, SEQ, PRED, is_training=False)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"short.tfrecord.*input_ids of length \[12 12\].*max_seq_length=16"
    ):
        next(iter(ds))


def test_ids_outside_the_vocab_stop_the_pipeline_naming_the_file(tmp_path):
    good = _write(tmp_path / "good.tfrecord", _records(4))  # ids < 40
    assert len(list(pipelines.pretraining_dataset(good, 2, SEQ, PRED, is_training=False, vocab_size=40))) == 2
    ds = pipelines.pretraining_dataset(f"{good}", 2, SEQ, PRED, is_training=False, vocab_size=35)
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"good.tfrecord.*has token ids \[.*\] outside \[0, vocab_size=35\)"
    ):
        list(ds)


def test_files_are_checked_before_training_with_their_names(tmp_path):
    good = _write(tmp_path / "good.tfrecord", _records(4))
    tfrecords.check_pretraining_file(good, SEQ, PRED, vocab_size=40)
    (tmp_path / "text.txt").write_text("The cat sat on the mat.\n" * 20)
    (tmp_path / "tiny.txt").write_text("cat\n")
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    data = open(good, "rb").read()
    (tmp_path / "cut.tfrecord").write_bytes(data[:40])  # inside the first record
    (tmp_path / "garbage.tfrecord").write_bytes(data[:12] + b"x" * (len(data) - 12))
    _write(tmp_path / "not_examples.tfrecord", [(None, b"\xff\xfe not a proto")])
    other = tf.train.Example(
        features=tf.train.Features(feature={"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))})
    )
    _write(tmp_path / "other.tfrecord", [(None, other.SerializeToString())])
    cases = [
        ("text.txt", "is not a TFRecord file"),
        ("tiny.txt", "is not a TFRecord file"),
        ("empty.tfrecord", "has no records"),
        ("cut.tfrecord", "is not a TFRecord file"),
        ("garbage.tfrecord", "is not a TFRecord file"),
        ("not_examples.tfrecord", "holds records that are not tf.train.Example protos"),
        ("other.tfrecord", "has no 'input_ids' feature: not pre-training data"),
    ]
    for name, message in cases:
        with pytest.raises(ValueError, match=f"{name} {message}"):
            tfrecords.check_pretraining_file(str(tmp_path / name), SEQ, PRED, vocab_size=40)
    with pytest.raises(ValueError, match=r"good.tfrecord has input_ids of length 16, but --max_seq_length=32"):
        tfrecords.check_pretraining_file(good, 32, PRED, vocab_size=40)
    with pytest.raises(
        ValueError, match=r"good.tfrecord has masked_lm_positions of length 4, but --max_predictions_per_seq=5"
    ):
        tfrecords.check_pretraining_file(good, SEQ, 5, vocab_size=40)
    with pytest.raises(ValueError, match=r"good.tfrecord has token id 3\d, but vocab_size=30"):
        tfrecords.check_pretraining_file(good, SEQ, PRED, vocab_size=30)


def test_a_truncated_file_is_found_and_named_when_reading_fails(tmp_path):
    good = _write(tmp_path / "good.tfrecord", _records(6))
    data = open(good, "rb").read()
    (tmp_path / "cut.tfrecord").write_bytes(data[:-5])
    cut = str(tmp_path / "cut.tfrecord")
    assert tfrecords.truncated_at(good) is None
    record_start = tfrecords.truncated_at(cut)
    assert 0 < record_start < len(data) - 5
    ds = pipelines.pretraining_dataset(f"{good},{cut}", 2, SEQ, PRED, is_training=False)
    with pytest.raises(tf.errors.DataLossError) as caught:
        list(ds)
    assert (
        tfrecords.read_error_message(caught.value, [good, cut])
        == f"{cut} is truncated: its record at byte {record_start} is cut short"
    )


def _parsed(records):
    return {
        name: tf.constant([f[name] for f, _ in records], tf.float32 if name == "masked_lm_weights" else tf.int32)
        for name in ORIGINAL_SPEC
        if name != "masked_lm_weights"
    } | {"masked_lm_weights": tf.constant([[1.0, 1.0, 0.0, 0.0]] * len(records))}


def test_dynamic_masking_keeps_tokens_and_follows_the_rules():
    records = _records(200, seed=3)
    features = _parsed(records)
    original = pipelines.unmask(features).numpy()
    config = pipelines.DynamicMasking(CLS, SEP, MASK, vocab_size=40, masked_lm_prob=0.15)
    first = pipelines.remask(features, config)
    second = pipelines.remask(features, config)
    assert not np.array_equal(first["masked_lm_positions"], second["masked_lm_positions"])  # fresh
    np.testing.assert_array_equal(pipelines.unmask(first).numpy(), original)
    lengths = features["input_mask"].numpy().sum(1)
    n = first["masked_lm_weights"].numpy().sum(1)
    expected = np.minimum(PRED, np.maximum(1, [round(length * 0.15) for length in lengths]))
    np.testing.assert_array_equal(n, expected)
    pos = first["masked_lm_positions"].numpy()
    for r in range(200):
        k = int(n[r])
        assert (np.diff(pos[r, :k]) > 0).all() and original[r, pos[r, :k]].tolist() == first["masked_lm_ids"].numpy()[
            r, :k
        ].tolist()
        assert not set(original[r, pos[r, :k]].tolist()) & {CLS, SEP}
    seeded = [pipelines.remask(features, config, seed=5)["masked_lm_positions"].numpy() for _ in range(2)]
    np.testing.assert_array_equal(*seeded)


def _unmasked(ids, n):
    """`n` copies of one 16-token sequence (13 real tokens), before any masking."""
    return {
        "input_ids": tf.constant([ids] * n, tf.int32),
        "input_mask": tf.constant([[1] * 13 + [0] * 3] * n, tf.int32),
        "masked_lm_positions": tf.zeros([n, PRED], tf.int32),
        "masked_lm_ids": tf.zeros([n, PRED], tf.int32),
        "masked_lm_weights": tf.zeros([n, PRED]),
    }


def test_dynamic_whole_word_masking_keeps_words_together():
    # Words [10 ##31 ##32] and [11]..: with "##" ids 31, 32, a word is all in or all out.
    ids = [CLS, 10, 31, 32, 11, 12, SEP, 13, 14, 15, 16, 17, SEP, 0, 0, 0]
    n = 100
    features = _unmasked(ids, n)
    config = pipelines.DynamicMasking(CLS, SEP, MASK, 40, masked_lm_prob=0.3, continuation_ids=(31, 32))
    out = pipelines.remask(features, config, seed=1)
    for r in range(n):
        k = int(out["masked_lm_weights"][r].numpy().sum())
        pos = set(out["masked_lm_positions"][r, :k].numpy().tolist())
        assert k <= 4 and len({1, 2, 3} & pos) in (0, 3)  # round(13 * 0.3) = 4


# Table 8's rows (MASK/SAME/RND 80/10/10, 100/0/0, 80/0/20, 80/20/0, 0/20/80, 0/0/100) as ([MASK], random).
TABLE_8 = [(0.8, 0.1), (1.0, 0.0), (0.8, 0.2), (0.8, 0.0), (0.0, 0.8), (0.0, 1.0)]


@pytest.mark.parametrize("mask_share, random_share", TABLE_8)
def test_dynamic_masking_with_other_splits_keeps_the_positions(mask_share, random_share):
    # Table 8's rows: the same seed chooses the same positions as the default split; the chosen
    # tokens become [MASK], a random id (any of the vocab's) or stay, in the split's shares.
    n, vocab_size = 20000, 1000
    ids = [CLS, *range(10, 21), SEP, 0, 0, 0]
    features = _unmasked(ids, n)
    default = pipelines.remask(features, pipelines.DynamicMasking(CLS, SEP, MASK, vocab_size, masked_lm_prob=0.3), 9)
    config = pipelines.DynamicMasking(
        CLS, SEP, MASK, vocab_size, masked_lm_prob=0.3, mask_token_prob=mask_share, random_token_prob=random_share
    )
    out = {k: v.numpy() for k, v in pipelines.remask(features, config, seed=9).items()}
    for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
        np.testing.assert_array_equal(out[name], default[name].numpy())
    assert (out["masked_lm_weights"] == 1).all()  # round(13 * 0.3) = 4 = PRED everywhere
    picked = np.take_along_axis(out["input_ids"], out["masked_lm_positions"], axis=1).ravel()
    labels = out["masked_lm_ids"].ravel()
    expected = {
        "mask": mask_share + random_share / vocab_size,
        "same": 1 - mask_share - random_share + random_share / vocab_size,
        "other": random_share * (1 - 2 / vocab_size),
    }
    observed = {
        "mask": np.mean(picked == MASK),
        "same": np.mean(picked == labels),
        "other": np.mean((picked != MASK) & (picked != labels)),
    }
    for name, p in expected.items():  # within 5 standard deviations of a binomial share
        assert abs(observed[name] - p) <= 5 * np.sqrt(p * (1 - p) / picked.size) + 1e-12, (name, observed[name], p)


def test_dynamic_masking_rejects_a_split_above_one():
    with pytest.raises(ValueError, match=r"mask_token_prob=0.9 \+ random_token_prob=0.2 = 1.1 is above 1"):
        pipelines.DynamicMasking(CLS, SEP, MASK, 40, mask_token_prob=0.9, random_token_prob=0.2)
    with pytest.raises(ValueError, match=r"random_token_prob=-0.5 must be in \[0, 1\]"):
        pipelines.DynamicMasking.from_vocab({"[CLS]": 0, "[SEP]": 1, "[MASK]": 2}, random_token_prob=-0.5)


def test_dynamic_masking_default_split_is_the_one_before_the_option():
    # Seeded, the replacements come from the seed's streams 2 (which replacement) and 3 (the
    # random id): the default cuts the first at 0.8 and 0.9, as before the split was an option.
    features = _parsed(_records(50, seed=4))
    out = pipelines.remask(features, pipelines.DynamicMasking(CLS, SEP, MASK, vocab_size=40), seed=11)
    u = tf.random.stateless_uniform([50, PRED], seed=[11, 2]).numpy()
    random_ids = np.floor(tf.random.stateless_uniform([50, PRED], seed=[11, 3]).numpy() * 40).astype(np.int32)
    labels, positions = out["masked_lm_ids"].numpy(), out["masked_lm_positions"].numpy()
    expected = np.where(u < 0.8, MASK, np.where(u < 0.9, labels, random_ids))
    real = out["masked_lm_weights"].numpy() > 0
    picked = np.take_along_axis(out["input_ids"].numpy(), positions, axis=1)
    np.testing.assert_array_equal(picked[real], expected[real])
