"""Fine-tuning inputs: the in-graph pipeline against the original's convert_single_example,
stated here on FullTokenizer's tokens; every eval/predict example once, in order."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.preprocessing import BertPackInputs, BertTokenizer
from bert_tf.tasks.classifier.inputs import TextPacker, classifier_dataset, encode_examples
from bert_tf.tasks.classifier.processors import InputExample
from bert_tf.tokenization import FullTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VOCAB = os.path.join(REPO, "data", "vocab.txt")


def original_features(tokenizer, text_a, text_b, max_seq_length):
    """run_classifier.convert_single_example, restated: pop from the longer list (B on ties)."""
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else None
    if tokens_b:
        while len(tokens_a) + len(tokens_b) > max_seq_length - 3:
            if len(tokens_a) > len(tokens_b):
                tokens_a.pop()
            else:
                tokens_b.pop()
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[: max_seq_length - 2]
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    padding = [0] * (max_seq_length - len(input_ids))
    return input_ids + padding, input_mask + padding, segment_ids + padding


def _texts(rng, n):
    words = ["the", "cat", "Sat", "on", "mat", "Café", "naïve", "Ångström", "我们", "喜欢", "co-op", "it's",
             "U.S.A.", "🙂", "\u00adsoft", "tab\there", "  ", "running", "unwanted", "ΣΊΣΥΦΟΣ"]
    return [" ".join(rng.choice(words, int(rng.integers(0, 14)))) for _ in range(n)]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_pipeline_builds_the_originals_features(do_lower_case):
    rng = np.random.default_rng(0)
    seq = 16
    a, b = _texts(rng, 120), _texts(rng, 120)
    b[:10] = [None] * 10  # single segments
    b[10:20] = ["", " ", "\t", "  \u200b ", "", "", "", "", "", ""]  # no B tokens: packed as single
    examples = [InputExample(f"x-{i}", ta, tb, "1") for i, (ta, tb) in enumerate(zip(a, b, strict=True))]
    tokenizer = BertTokenizer(VOCAB, do_lower_case=do_lower_case)
    pack = TextPacker(tokenizer, BertPackInputs.from_vocabulary(tokenizer.vocabulary, seq), pair=True)
    features = encode_examples(examples, ["0", "1"], "single")
    got = {k: [] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    for x, _ in classifier_dataset(features, pack, 32, "predict"):
        for k in got:
            got[k].append(x[k].numpy())
        assert x["input_word_ids"].dtype == tf.int32
    got = {k: np.concatenate(v)[: len(examples)] for k, v in got.items()}

    python = FullTokenizer(VOCAB, do_lower_case=do_lower_case)
    for i, (ta, tb) in enumerate(zip(a, b, strict=True)):
        ids, mask, segments = original_features(python, ta, tb, seq)
        assert got["input_word_ids"][i].tolist() == ids, (ta, tb)
        assert got["input_mask"][i].tolist() == mask
        assert got["input_type_ids"][i].tolist() == segments


def _one_replica_batches(features, batch, mode, **kw):
    pack = lambda a, b: {"text": a}  # noqa: E731 - keep the text to see which examples came
    batches = classifier_dataset(features, pack, batch, mode, **kw)
    return [(x["text"].numpy().tolist(), y["weight"].numpy().tolist()) for x, y in batches]


def _features(n):
    return encode_examples([InputExample(str(i), f"t{i}", None, None) for i in range(n)], ["0", "1"], "single")


def test_eval_sees_every_example_once_in_order_on_any_number_of_replicas():
    features = _features(23)
    expected = [f"t{i}".encode() for i in range(23)]
    batches = _one_replica_batches(features, 4, "eval")
    texts = [t for ts, _ in batches for t in ts]
    weights = [w for _, ws in batches for w in ws]
    assert texts[:23] == expected and len(texts) == 24 and weights == [1.0] * 23 + [0.0]

    # 4 replicas of batch 3 (global 12) fed by 2 pipelines: each pipeline gives its 2 replicas
    # their slices; taken in replica order, each global batch is the next 12 examples.
    per_pipeline = []
    for pid in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pid, num_replicas_in_sync=4)
        per_pipeline.append(_one_replica_batches(features, 3, "eval", input_context=context))
    assert len(per_pipeline[0]) == len(per_pipeline[1]) == 4  # 2 global batches x 2 local replicas
    merged = []
    for step in range(2):
        for pid in range(2):
            for local in range(2):
                merged.append(per_pipeline[pid][2 * step + local])
    texts = [t for ts, _ in merged for t in ts]
    weights = [w for _, ws in merged for w in ws]
    assert texts[:23] == expected and weights == [1.0] * 23 + [0.0]


def test_training_order_is_seeded_reshuffled_each_epoch_and_skip_continues_it():
    features = _features(12)
    ds = classifier_dataset(features, lambda a, b: {"text": a}, 4, "train", seed=3)
    first = [x["text"].numpy().tolist() for x, _ in ds.take(9)]
    ds = classifier_dataset(features, lambda a, b: {"text": a}, 4, "train", seed=3)
    again = [x["text"].numpy().tolist() for x, _ in ds.take(9)]
    assert first == again
    every = sorted(f"t{i}".encode() for i in range(12))
    for epoch in range(3):
        assert sorted(t for batch in first[3 * epoch : 3 * epoch + 3] for t in batch) == every
    assert first[:3] != first[3:6]  # a new order every epoch
    skipped = classifier_dataset(features, lambda a, b: {"text": a}, 4, "train", seed=3, skip_batches=5)
    assert [x["text"].numpy().tolist() for x, _ in skipped.take(4)] == first[5:9]


def test_labels_are_encoded_or_named_when_wrong():
    examples = [InputExample("train-1", "a", None, "pos"), InputExample("train-2", "b", None, None)]
    assert encode_examples(examples, ["neg", "pos"], "single")["label"].tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"dev: example 'train-1' has label 'pos'; the task's labels are \['x', 'y'\]"):
        encode_examples(examples, ["x", "y"], "single", source="dev")
    scores = encode_examples([InputExample("s-1", "a", "b", "3.8")], [], "regression")["label"]
    assert scores.dtype == np.float32 and scores.tolist() == [pytest.approx(3.8)]
    examples = [InputExample("m-1", "a", None, ["b", "c"]), InputExample("m-2", "a", None, [])]
    multi = encode_examples(examples, ["a", "b", "c"], "multi")
    assert multi["label"].tolist() == [[0, 1, 1], [0, 0, 0]]
    with pytest.raises(ValueError, match="label 'z'"):
        encode_examples([InputExample("m-3", "a", None, ["z"])], ["a"], "multi")


def test_windowed_batches_keep_each_texts_windows_together_and_measure_a_text_over_all_of_them():
    from bert_tf.preprocessing import text_preprocessing
    from bert_tf.preprocessing.text_windows import WINDOW_COUNT, WINDOW_TEXT
    from bert_tf.tasks.classifier.inputs import packed_lengths, window_counts

    rng = np.random.default_rng(3)
    texts = _texts(rng, 23)
    examples = [InputExample(str(i), t, None, "0") for i, t in enumerate(texts)]
    features = encode_examples(examples, ["0", "1"], "single")
    tokenizer, packer = text_preprocessing(VOCAB, True, 8)
    pack = TextPacker(tokenizer, packer, pair=False, windows=(3, 4))
    full = FullTokenizer(VOCAB, do_lower_case=True)
    pieces = [len(full.tokenize(t)) for t in texts]
    # A text's windows (rule: tests/preprocessing/test_text_windows.py) and its tokens over them.
    expected_windows = [1 if n <= 6 else min(3, 1 + -(-(n - 6) // 4)) for n in pieces]
    windows, cut = window_counts(features, pack.traced)
    assert windows.tolist() == expected_windows
    assert cut.tolist() == [int(n > 6 + (w - 1) * 4) for n, w in zip(pieces, expected_windows, strict=True)]
    covered = [min(n, 6 + (w - 1) * 4) for n, w in zip(pieces, expected_windows, strict=True)]
    overlap = [sum(min(6, n - 4 * k) for k in range(w)) for n, w in zip(covered, expected_windows, strict=True)]
    assert packed_lengths(features, pack.traced).tolist() == [o + 2 * w for o, w in zip(overlap, expected_windows,
                                                                                       strict=True)]
    for mode in ("train", "predict"):
        for x, y in classifier_dataset(features, pack.traced, 5, mode, seed=0, length_bucket=1).take(3):
            counts = x[WINDOW_COUNT].numpy()
            assert len(counts) == len(y["label"]) == 5
            assert x[WINDOW_TEXT].numpy().tolist() == [t for t, c in enumerate(counts) for _ in range(c)]
            assert x["input_word_ids"].shape[0] == counts.sum()
