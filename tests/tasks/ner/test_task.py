"""NER as the loop's task: the loss over first sub-tokens only, conlleval's figures at eval."""

import numpy as np
import pytest

from bert_tf.tasks.ner import conlleval
from bert_tf.tasks.ner.conll import Sentence
from bert_tf.tasks.ner.task import NerTask
from tests.tiny import VOCAB, tiny_config, write_vocab

LABELS = ["O", "B-PER", "I-PER", "B-LOC"]


def test_the_loss_and_accuracy_count_first_pieces_only():
    task = NerTask(tiny_config(), LABELS, max_seq_length=16)
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5, 4)).astype(np.float32)
    label = rng.integers(0, 4, size=(2, 5)).astype(np.int32)
    weight = np.array([[0, 1, 0, 1, 1], [0, 1, 1, 0, 0]], np.float32)
    sums = {k: float(v) for k, v in task.sums({"label": label, "weight": weight}, logits).items()}
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_p, label[..., None], -1)[..., 0]
    assert sums["examples"] == 5.0  # words, not positions
    assert sums["loss_sum"] == pytest.approx(-(picked * weight).sum(), rel=1e-5)
    assert sums["correct"] == ((logits.argmax(-1) == label) * weight).sum()
    assert task.loss(sums, {"examples": 5.0}) == pytest.approx(sums["loss_sum"] / 5)


def test_eval_reads_each_word_once_across_windows_and_reports_conlleval(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    task = NerTask(tiny_config(), LABELS, vocab, max_seq_length=6, context_words=1)
    sentences = [
        Sentence(["cat", "dog", "running", "mat", "sat"], ["B-PER", "I-PER", "O", "B-LOC", "O"]),
        Sentence(["the", "cat"], ["O", "B-PER"]),
    ]
    features = task.encode(sentences)
    assert len(features["sentence"]) > 2  # the first sentence took windows
    # The prediction: gold, but the second sentence's PER read as LOC (a sham model's argmax).
    predicted = features["label_ids"].copy()
    predicted[features["sentence"] == 1] = np.where(predicted[features["sentence"] == 1] == 1, 3, 0)
    gathered = {"predicted": predicted, "label": features["label_ids"], "weight": features["label_weights"],
                "sentence": features["sentence"]}
    # A padding row, as evaluation adds them.
    gathered = {k: np.concatenate([v, np.zeros((1,) + v.shape[1:], v.dtype)]) for k, v in gathered.items()}
    results = task.eval_results({"loss_sum": 2.0, "examples": 7.0, "correct": 6.0}, gathered, [0.25, 0.35])
    expected = conlleval.evaluate([s.tags for s in sentences], [sentences[0].tags, ["O", "B-LOC"]])
    assert expected.overall.correct == 2 and expected.overall.gold == 3
    assert results["eval_f1"] == pytest.approx(expected.overall.f1) and results["eval_LOC_precision"] == 0.5
    assert results["eval_loss"] == pytest.approx(2 / 7) and results["loss"] == pytest.approx(0.3)
    assert results["eval_accuracy"] == pytest.approx(6 / 7)

    batches = list(task.dataset(features, "eval", 2))
    weights = np.concatenate([y["weight"].numpy() for _, y in batches])
    assert weights.sum() == 7 and not weights[len(features["sentence"]):].any()


def test_labels_must_be_tags():
    with pytest.raises(ValueError, match=r"labels \['PER'\] are not O or B-/I-/E-/S-"):
        NerTask(tiny_config(), ["O", "PER"], max_seq_length=16)
    with pytest.raises(ValueError, match="context_words must not be negative"):
        NerTask(tiny_config(), LABELS, max_seq_length=16, context_words=-1)
