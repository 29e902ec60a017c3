"""The classifier export's outputs for each kind of label, against numpy."""

import numpy as np
import tensorflow as tf

from bert_tf.tasks.classifier.export import classifier_outputs

LOGITS = np.array([[2.0, -1.0, 0.5], [-3.0, 0.2, 0.1], [0.0, 0.0, 4.0]], np.float32)


def test_single_label_outputs_softmax_probabilities_and_the_best_labels_name():
    out = classifier_outputs(tf.constant(LOGITS), ["a", "b", "c"], "single")
    exp = np.exp(LOGITS - LOGITS.max(-1, keepdims=True))
    np.testing.assert_allclose(out["probabilities"], exp / exp.sum(-1, keepdims=True), rtol=1e-6)
    assert out["label_id"].numpy().tolist() == [0, 1, 2]
    assert out["label"].numpy().tolist() == [b"a", b"b", b"c"]


def test_regression_outputs_the_score():
    out = classifier_outputs(tf.constant(LOGITS[:, :1]), [], "regression")
    assert set(out) == {"score"}
    np.testing.assert_allclose(out["score"], LOGITS[:, 0])


def test_multi_label_outputs_sigmoids_and_the_names_above_one_half_joined_by_commas():
    out = classifier_outputs(tf.constant(LOGITS), ["animal", "colour", "size"], "multi")
    np.testing.assert_allclose(out["probabilities"], 1 / (1 + np.exp(-LOGITS)), rtol=1e-6)
    # Logit 0 is probability 0.5: not above the threshold, as test_predictions.tsv decides.
    assert out["label_id"].numpy().tolist() == [[1, 0, 1], [0, 1, 1], [0, 0, 1]]
    assert out["label"].numpy().tolist() == [b"animal,size", b"colour,size", b"size"]
