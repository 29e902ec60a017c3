"""The token-classifier export's windows: `word_windows` (every sentence of a batch at once, in
graph) cuts sentences exactly as `ner_inputs.windows` (one sentence, Python) does; a feature-based
run exports from its folder as a fine-tuned one does and tags text as its Keras model."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.ner.export import word_windows
from bert_tf.tasks.ner.inputs import windows


def _windows(counts, row_splits, capacity, context_words):
    """word_windows in a graph, as the export runs it."""
    run = tf.function(lambda c, s: word_windows(c, s, capacity, context_words))
    return [x.numpy().tolist() for x in run(tf.constant(counts, tf.int64), tf.constant(row_splits, tf.int64))]


def test_word_windows_cut_every_sentence_as_ner_inputs_windows_does():
    rng = np.random.default_rng(0)
    for capacity, context_words in [(6, 2), (6, 0), (10, 16), (3, 1), (126, 16)]:
        piece_counts = [1, 1, 1, 2, 3, capacity // 2, capacity]
        sentences = [rng.choice(piece_counts, size=rng.integers(0, 40)).tolist() for _ in range(40)]
        sentences[5] = []  # a sentence without words
        offsets = np.cumsum([0] + [len(s) for s in sentences])
        expected = [
            (offsets[i] + left, offsets[i] + start, offsets[i] + end)
            for i, counts in enumerate(sentences)
            for left, start, end in windows(counts, capacity, context_words)
        ]
        got = _windows([c for s in sentences for c in s], offsets, capacity, context_words)
        assert sorted(zip(*got, strict=True)) == sorted(expected), (capacity, context_words)


def test_word_windows_of_a_batch_without_words():
    assert _windows([], [0, 0, 0], 6, 2) == [[], [], []]


@pytest.mark.slow
def test_a_feature_based_run_exports_from_its_folder_and_tags_text_as_its_model(tmp_path):
    from bert_tf.export import exports
    from bert_tf.models import BertEncoder, BertFeatureTagger
    from bert_tf.preprocessing import BertTokenizer
    from bert_tf.tasks.ner.conll import Sentence
    from bert_tf.tasks.ner.inputs import encode_sentences, tags_of
    from tests.tiny import tiny_config, write_vocab

    tags = ["O", "B-X", "I-X"]
    config = tiny_config(num_hidden_layers=4)
    model = BertFeatureTagger(BertEncoder.from_bert_config(config), len(tags), "weighted_sum_last_four", lstm_units=6)
    model.layer_weights.assign([0.5, -1.0, 0.0, 2.0])  # not as a fresh model starts
    # The run's folder as run_ner leaves it: record, config, vocabulary, the loop's checkpoint.
    run = tmp_path / "run"
    run.mkdir()
    record = {"kind": "ner", "task_name": "ner", "labels": tags, "max_seq_length": 8, "window_context_words": 2,
              "feature_based": "weighted_sum_last_four", "lstm_units": 6, "label_kind": "token"}
    (run / "fine_tuning_task.json").write_text(json.dumps(record))
    (run / "bert_config.json").write_text(json.dumps(config.to_dict()))
    vocab = write_vocab(run / "vocab.txt")
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(run), 1, checkpoint_name="ckpt").save(3)

    export = exports.read("ner", str(run))
    assert type(export.model) is BertFeatureTagger and export.model.feature_based == "weighted_sum_last_four"
    for a, b in zip(model.weights, export.model.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    what = export.write(str(tmp_path / "served"))
    assert what == "a BertFeatureTagger of task 'ner' (seq_length 8; the request's exact length, padding skipped)"

    texts = ["the cat sat on the mat", "a dog is running and the red cat is big and small", "un"]
    served = tf.saved_model.load(str(tmp_path / "served")).signatures["serving_default"](text=tf.constant(texts))
    sentences = [Sentence(t.split()) for t in texts]
    features = encode_sentences(sentences, tags, BertTokenizer(vocab, do_lower_case=True), 8, 2)
    assert len(features["sentence"]) > len(texts)  # the long sentence took windows
    inputs = {k: features[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    probabilities = tf.nn.softmax(model(inputs, training=False)).numpy()
    want = tags_of(probabilities, features["label_weights"], [len(s.words) for s in sentences])
    for i, sentence in enumerate(sentences):
        n = len(sentence.words)
        got = served["probabilities"][i, :n].numpy()
        np.testing.assert_allclose(got, np.reshape(want[i], (n, len(tags))), atol=1e-5)
        assert served["label_id"][i, :n].numpy().tolist() == np.argmax(got, axis=-1).tolist()
