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


# --- The feature-based approach (paper §5.3, Table 7) ---

SENTENCES = [
    Sentence(["cat", "sat", "on", "the", "mat"], ["B-PER", "O", "O", "O", "B-LOC"]),
    Sentence(["the", "dog", "is", "big"], ["O", "B-PER", "O", "O"]),
    Sentence(["red", "cat", "and", "blue", "dog"], ["O", "B-PER", "O", "O", "B-PER"]),
    Sentence(["a", "mat"], ["O", "B-LOC"]),
]


def _feature_task(tmp_path, **settings):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    config = tiny_config(num_hidden_layers=4)
    return NerTask(config, LABELS, vocab, max_seq_length=10, feature_based="concat_last_four", lstm_units=6,
                   **settings)


def test_training_through_the_loop_leaves_the_encoder_bit_identical(tmp_path):
    import tensorflow as tf

    from bert_tf.models import BertFeatureTagger
    from bert_tf.training.trainer import Trainer, TrainingSettings

    task = _feature_task(tmp_path)
    settings = TrainingSettings(str(tmp_path / "out"), train_batch_size=4, learning_rate=1e-2, num_train_steps=6,
                                num_warmup_steps=0, save_checkpoints_steps=6, seed=1)
    trainer = Trainer(task, settings, tf.distribute.get_strategy())
    model = trainer.model
    assert type(model) is BertFeatureTagger and (model.feature_based, model.lstm_units) == ("concat_last_four", 6)
    encoder = [w.numpy().copy() for w in model.encoder.weights]
    head = [w.numpy().copy() for w in model.classifier.weights]
    trainer.train(task.encode(SENTENCES))
    assert trainer.global_step == 6
    for before, after in zip(encoder, model.encoder.weights, strict=True):
        np.testing.assert_array_equal(before, after.numpy())
    assert not all(np.array_equal(b, a.numpy()) for b, a in zip(head, model.classifier.weights, strict=True))


def test_googles_layout_gives_a_feature_tagger_its_encoder_and_our_checkpoints_the_whole_model(tmp_path):
    import tensorflow as tf

    from bert_tf.checkpoints import original_weights
    from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint

    task = _feature_task(tmp_path)
    weights = random_weights(original_shapes(task.bert_config), seed=2)  # with the pre-training heads
    model = task.build_model()
    report = task.restore(model, write_tf1_checkpoint(tmp_path / "google" / "bert_model.ckpt", weights))
    assert report.not_found == ["the BertFeatureTagger head"] and any(n.startswith("cls/") for n in report.unused)
    loaded = original_weights(model.encoder)
    for name in loaded:
        np.testing.assert_array_equal(loaded[name], weights[name], err_msg=name)
    # Google's download folder (no checkpoint state file) reads the same way.
    assert task.restore(task.build_model(), str(tmp_path / "google")).not_found == ["the BertFeatureTagger head"]

    # One of the loop's checkpoints of a feature tagger: all of it.
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(tmp_path / "run"), 1)
    manager.save(checkpoint_number=3)
    again = task.build_model()
    assert task.restore(again, str(tmp_path / "run")) is None
    for a, b in zip(model.weights, again.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_feature_based_settings_are_checked_before_any_input():
    with pytest.raises(ValueError, match=r"^feature_based='concat_last_four' needs at least 4 hidden layers"):
        NerTask(tiny_config(), LABELS, max_seq_length=16, feature_based="concat_last_four")
    with pytest.raises(ValueError, match=r"^feature_based='last_two' is not one of "):
        NerTask(tiny_config(), LABELS, max_seq_length=16, feature_based="last_two")
    with pytest.raises(ValueError, match=r"^lstm_units=0 must be at least 1$"):
        NerTask(tiny_config(), LABELS, max_seq_length=16, feature_based="last", lstm_units=0)
