"""SWAG batches `[batch, choices, seq]` cut to their longest choice: eval figures and
the choices' probabilities of fixed padding, on the same weights."""

import numpy as np
import pytest

from bert_tf.tasks.classifier.inputs import packed_lengths
from bert_tf.tasks.swag.reader import SwagExample, encode_examples
from bert_tf.tasks.swag.task import SwagTask
from tests.tasks.padding_twins import assert_same_results, cut_lengths, run_both, trainer_of
from tests.tiny import VOCAB, tiny_config, write_vocab

SEQ = 20
EXAMPLES = [
    SwagExample("0", "the cat sat", "a dog", ["runs .", "is big and red ,", "sat", "running"], 2),
    SwagExample("1", "big", "the", ["a", "mat", "cat", "dog"], 0),
    SwagExample("2", "the small blue dog runs on a red mat", "and the cat", ["a", "is", "big", "sat on the mat"], 3),
    SwagExample("3", "red", "", ["a", "b", "the", "dog"], 1),
    SwagExample("4", "the cat", "is", ["big", "small", "red", "blue"], 0),
]


@pytest.mark.slow
def test_eval_and_predict_equal_fixed_padding(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    data = encode_examples(EXAMPLES)
    task = SwagTask(tiny_config(), 4, vocab, max_seq_length=SEQ)
    (expected, predicted), (cut, got, cut_predicted) = run_both(trainer_of(task, tmp_path), data)
    # A row's length is its longest choice's.
    lengths = packed_lengths(data, task.pack_choices, ("context", "choices"))
    assert lengths.tolist() == [13, 6, 20, 5, 7]  # by hand: [CLS] context [SEP] start ending [SEP]
    assert cut == cut_lengths(lengths, SEQ) == [16, 20, 8]
    assert_same_results(expected, got)
    expected, got = predicted["probabilities"], cut_predicted["probabilities"]
    assert got.shape == expected.shape == (5, 4)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_a_runs_datasets_trace_the_choices_packing_once(tmp_path, monkeypatch):
    traced = []
    pack = SwagTask.pack_choices
    monkeypatch.setattr(SwagTask, "pack_choices", lambda self, c, e: traced.append(1) or pack(self, c, e))
    data = encode_examples(EXAMPLES)
    task = SwagTask(tiny_config(), vocab_file=write_vocab(tmp_path / "vocab.txt", VOCAB), max_seq_length=SEQ,
                    length_bucket=1, group_by_length=True)
    shapes = [tuple(x["input_word_ids"].shape) for mode in ("train", "eval", "predict")
              for x, _ in task.dataset(data, mode, 2, seed=1).take(2)]
    assert traced == [1]
    assert all(s[:2] == (2, 4) for s in shapes)
