"""Classification batches cut to their longest pair (issue 21): the cut follows the rule, and
evaluation and prediction give what fixed padding gives on the same weights."""

import numpy as np
import pytest

from bert_tf.tasks.classifier.inputs import encode_examples, packed_lengths
from bert_tf.tasks.classifier.processors import InputExample
from bert_tf.tasks.classifier.task import ClassifierTask
from tests.tasks.padding_twins import assert_same_results, cut_lengths, run_both, trainer_of
from tests.tiny import VOCAB, tiny_config, write_vocab

SEQ = 24
WORDS = ["the", "cat", "sat", "on", "mat", "and", "dog", "is", "big", ",", "red", "blue", "small", "running"]


def _examples(n=9, seed=0):
    rng = np.random.default_rng(seed)

    def text(most):
        return " ".join(rng.choice(WORDS, rng.integers(1, most)))

    return [InputExample(f"g{i}", text(14), text(8) if i % 3 else None, "ab"[i % 2]) for i in range(n)]


def test_eval_and_predict_equal_fixed_padding(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    data = encode_examples(_examples(), ["a", "b"], "single")
    task = ClassifierTask(tiny_config(), ["a", "b"], vocab_file=vocab, max_seq_length=SEQ)
    (expected, predicted), (cut, got, cut_predicted) = run_both(trainer_of(task, tmp_path), data)
    assert cut == cut_lengths(packed_lengths(data, task.pack), SEQ) and min(cut) < SEQ
    assert_same_results(expected, got)
    expected, got = predicted["probabilities"], cut_predicted["probabilities"]
    assert got.shape == expected.shape == (9, 2)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_packed_lengths_count_each_rows_real_tokens(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    task = ClassifierTask(tiny_config(), ["a", "b"], vocab_file=vocab, max_seq_length=8)
    examples = [InputExample("1", "the cat", "a dog", "a"), InputExample("2", "running", None, "b"),
                InputExample("3", "the cat sat on the mat", "and the dog", "a")]
    lengths = packed_lengths(encode_examples(examples, ["a", "b"], "single"), task.pack)
    # [CLS] the cat [SEP] a dog [SEP]; [CLS] run ##ning [SEP]; truncated to max_seq_length.
    assert lengths.tolist() == [7, 4, 8]


def test_a_bad_bucket_is_refused():
    with pytest.raises(ValueError, match=r"^length_bucket=0 must be a positive integer"):
        ClassifierTask(tiny_config(), ["a", "b"], max_seq_length=16, length_bucket=0)
