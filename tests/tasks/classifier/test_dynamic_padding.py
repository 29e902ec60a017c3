"""Classification batches cut to their longest pair: each example's length as packed,
the cut by the rule, and evaluation and prediction as fixed padding gives them on the same weights."""

import numpy as np
import pytest

from bert_tf.tasks.classifier.inputs import TextPacker, encode_examples, packed_lengths
from bert_tf.tasks.classifier.processors import InputExample
from bert_tf.tasks.classifier.task import ClassifierTask
from tests.tasks.padding_twins import assert_same_results, cut_lengths, run_both, trainer_of
from tests.tiny import VOCAB, tiny_config, write_vocab

SEQ = 24
# Each example's tokens with [CLS] and [SEP], by hand: 4, 11, 4, 19, 14, 3, 24 (26 cut to SEQ), 5, 4.
EXAMPLES = [
    ("the cat", None), ("the cat sat on the mat", "a dog"), ("running", None),
    ("the big red dog runs on the small blue mat and the cat is running", None), ("a cat", "a dog , a cat and a dog ."),
    ("is", None), ("the cat sat on the mat and the dog sat on the mat and the cat sat on the mat", "a dog"),
    ("big", "small"), ("the mat", None),
]
LENGTHS = [4, 11, 4, 19, 14, 3, 24, 5, 4]


@pytest.mark.slow
def test_eval_and_predict_equal_fixed_padding(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    examples = [InputExample(f"g{i}", a, b, "ab"[i % 2]) for i, (a, b) in enumerate(EXAMPLES)]
    data = encode_examples(examples, ["a", "b"], "single")
    task = ClassifierTask(tiny_config(), ["a", "b"], vocab_file=vocab, max_seq_length=SEQ)
    assert packed_lengths(data, task.pack).tolist() == LENGTHS
    (expected, predicted), (cut, got, cut_predicted) = run_both(trainer_of(task, tmp_path), data)
    assert cut == cut_lengths(LENGTHS, SEQ) == [12, 20, 16, 24, 4]
    assert_same_results(expected, got)
    expected, got = predicted["probabilities"], cut_predicted["probabilities"]
    assert got.shape == expected.shape == (9, 2)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_a_bad_bucket_is_refused():
    with pytest.raises(ValueError, match=r"^length_bucket=0 must be a positive integer"):
        ClassifierTask(tiny_config(), ["a", "b"], max_seq_length=16, length_bucket=0)


def test_a_runs_datasets_trace_the_tokenizer_once(tmp_path, monkeypatch):
    """Train (grouped by length), eval and predict datasets share one trace of the packer."""
    traced = []
    call = TextPacker.__call__
    monkeypatch.setattr(TextPacker, "__call__", lambda self, a, b: traced.append(1) or call(self, a, b))
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    examples = [InputExample(f"g{i}", a, b, "ab"[i % 2]) for i, (a, b) in enumerate(EXAMPLES)]
    data = encode_examples(examples, ["a", "b"], "single")
    task = ClassifierTask(tiny_config(), ["a", "b"], vocab_file=vocab, max_seq_length=SEQ, length_bucket=4,
                          group_by_length=True)
    lengths = {mode: [int(x["input_mask"].numpy().sum(-1).max()) for x, _ in task.dataset(data, mode, 3, seed=1)
                      .take(3)] for mode in ("train", "eval", "predict")}
    assert traced == [1]
    assert sorted(lengths["eval"]) == sorted(max(LENGTHS[i:i + 3]) for i in (0, 3, 6))
