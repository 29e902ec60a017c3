"""NER batches cut to their longest window, labels and weights with them: eval figures
and the predicted tags of fixed padding, on the same weights."""

import numpy as np

from bert_tf.tasks.ner.conll import Sentence
from bert_tf.tasks.ner.task import NerTask
from tests.tasks.padding_twins import assert_same_results, cut_lengths, run_both, trainer_of
from tests.tiny import VOCAB, tiny_config, write_vocab

SEQ = 16
LABELS = ["O", "B-PER", "I-PER", "B-LOC"]
WORDS = ["cat", "dog", "running", "mat", "sat", "the", "unwanted", "red", "is"]


def test_eval_and_predicted_tags_equal_fixed_padding(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    rng = np.random.default_rng(3)
    sentences = []
    for n in (1, 3, 9, 2, 20, 4, 6):  # the 20-word sentence takes two windows
        words = list(rng.choice(WORDS, n))
        sentences.append(Sentence(words, [LABELS[i] for i in rng.integers(0, 4, n)]))
    task = NerTask(tiny_config(), LABELS, vocab, max_seq_length=SEQ, context_words=2)
    data = task.encode(sentences)
    (expected, predicted), (cut, got, cut_predicted) = run_both(trainer_of(task, tmp_path), data)
    assert cut == cut_lengths(data["input_mask"].sum(1), SEQ) and min(cut) < SEQ
    assert_same_results(expected, got)
    expected, got = predicted["predicted"], cut_predicted["predicted"]
    assert got.shape == expected.shape == (len(data["sentence"]), SEQ)  # padded back: gathered as before
    tagged = data["label_weights"] > 0
    assert (got[tagged] == expected[tagged]).all()
    short = np.repeat(np.array(cut) <= 8, 2)[: len(got)]
    assert short.any() and not got[short, 8:].any()  # past a batch's cut: the padding's 0
