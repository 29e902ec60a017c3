"""The GLUE metrics against hand-worked cases and independent statements of their formulas."""

import numpy as np
import pytest

from bert_tf.tasks.classifier import metrics


def test_hand_worked_binary_case():
    labels = [1, 1, 0, 0, 1, 0]
    predictions = [1, 0, 0, 0, 1, 1]
    # tp = 2 (rows 0, 4), fn = 1 (row 1), fp = 1 (row 5), tn = 2 (rows 2, 3).
    assert metrics.accuracy(labels, predictions) == pytest.approx(4 / 6)
    assert metrics.f1_score(labels, predictions) == pytest.approx(2 / 3)  # P = R = 2/3
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx((2 * 2 - 1 * 1) / 9)  # sqrt(3*3*3*3) = 9
    # Degenerate cases follow scikit-learn: no positive anywhere -> F1 0; a constant prediction -> MCC 0.
    assert metrics.f1_score([0, 0], [0, 0]) == 0.0
    assert metrics.matthews_corrcoef([1, 0, 1], [1, 1, 1]) == 0.0


def _ranks_by_counting(x):
    """Average ranks from 1, the definition: 1 + (values below) + (other equal values) / 2."""
    x = np.asarray(x, float)
    return np.array([1 + np.sum(x < v) + (np.sum(x == v) - 1) / 2 for v in x])


def test_random_cases_against_independent_statements():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(5, 60))
        labels = rng.integers(0, 2, n)
        predictions = rng.integers(0, 2, n)
        tp = sum(1 for a, b in zip(labels, predictions, strict=True) if a == b == 1)
        precision = tp / max(sum(predictions), 1)
        recall = tp / max(sum(labels), 1)
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        assert metrics.f1_score(labels, predictions) == pytest.approx(f1)
        # Matthews' coefficient is Pearson's r of the two 0/1 vectors (when neither is constant).
        if labels.std() > 0 and predictions.std() > 0:
            pearson = np.corrcoef(labels, predictions)[0, 1]
            assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(pearson)
        x = rng.normal(size=n)
        y = 0.5 * x + rng.normal(size=n)
        assert metrics.pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
        # Scores with ties (STS-B labels are multiples of 0.2).
        xs, ys = np.round(x * 2) / 2, np.round(y * 2) / 2
        expected = np.corrcoef(_ranks_by_counting(xs), _ranks_by_counting(ys))[0, 1]
        assert metrics.spearman(xs, ys) == pytest.approx(expected)


def test_multilabel_f1_against_per_label_counting():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, (40, 5))
    predictions = rng.integers(0, 2, (40, 5))
    labels[:, 4] = 0
    predictions[:, 4] = 0  # a label nobody has nor predicts: its F1 counts as 0
    per_label, tp_all, true_all, pred_all = [], 0, 0, 0
    for j in range(5):
        tp = sum(int(labels[i, j] and predictions[i, j]) for i in range(40))
        t, p = int(labels[:, j].sum()), int(predictions[:, j].sum())
        per_label.append(0.0 if t + p == 0 else 2 * tp / (t + p))
        tp_all, true_all, pred_all = tp_all + tp, true_all + t, pred_all + p
    micro, macro = metrics.multilabel_f1(labels, predictions)
    assert micro == pytest.approx(2 * tp_all / (true_all + pred_all))
    assert macro == pytest.approx(np.mean(per_label))
    # Hand-worked: two examples, labels {a}, {a, b}; predicted {a, b}, {b}.
    micro, macro = metrics.multilabel_f1([[1, 0], [1, 1]], [[1, 1], [0, 1]])
    assert micro == pytest.approx(2 * 2 / (3 + 3))  # tp = 2 (a in row 0, b in row 1)
    assert macro == pytest.approx((2 * 1 / 3 + 2 * 1 / 3) / 2)
