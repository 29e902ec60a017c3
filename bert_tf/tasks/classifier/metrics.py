"""The metrics GLUE reports, in numpy: computed once over a whole eval set (F1, Matthews
correlation and the correlations are not averages of per-batch values).

Every function takes 1-D (or, for multi-label, 2-D 0/1) arrays of equal length and returns a
Python float. Conventions where a ratio is 0/0 follow scikit-learn's defaults (the value is 0),
so figures compare with what GLUE's own scripts print.
"""

import numpy as np


def _ratio(numerator, denominator):
    return float(numerator) / float(denominator) if denominator else 0.0


def accuracy(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return _ratio(np.sum(labels == predictions), labels.size)


def f1_score(labels, predictions, positive=1):
    """Binary F1 of the class `positive` (GLUE's F1 for MRPC and QQP: class 1)."""
    labels, predictions = np.asarray(labels) == positive, np.asarray(predictions) == positive
    tp = np.sum(labels & predictions)
    return _ratio(2 * tp, np.sum(labels) + np.sum(predictions))


def matthews_corrcoef(labels, predictions):
    """Matthews correlation of two binary 0/1 arrays (GLUE's metric for CoLA)."""
    labels, predictions = np.asarray(labels) == 1, np.asarray(predictions) == 1
    tp = float(np.sum(labels & predictions))
    tn = float(np.sum(~labels & ~predictions))
    fp = float(np.sum(~labels & predictions))
    fn = float(np.sum(labels & ~predictions))
    return _ratio(tp * tn - fp * fn, np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))


def pearson(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    return _ratio(np.sum(x * y), np.sqrt(np.sum(x * x) * np.sum(y * y)))


def _average_ranks(x):
    """Ranks from 1, ties sharing the mean of the ranks they span (as Spearman's rho needs)."""
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    # Each run of equal values gets the mean of its positions.
    starts = np.r_[True, sorted_x[1:] != sorted_x[:-1]]
    run = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], x.size] - 1
    ranks = np.empty(x.size)
    ranks[order] = (first[run] + last[run]) / 2.0 + 1.0
    return ranks


def spearman(x, y):
    """Spearman's rank correlation: Pearson's over average ranks."""
    return pearson(_average_ranks(x), _average_ranks(y))


def multilabel_f1(labels, predictions):
    """(micro F1, macro F1) of `[examples, labels]` 0/1 arrays.

    Micro counts every (example, label) decision together; macro averages the F1 of each label
    (a label never present nor predicted scores 0, as scikit-learn's default).
    """
    labels, predictions = np.asarray(labels) > 0, np.asarray(predictions) > 0
    tp = np.sum(labels & predictions, axis=0)
    support, predicted = np.sum(labels, axis=0), np.sum(predictions, axis=0)
    micro = _ratio(2 * tp.sum(), support.sum() + predicted.sum())
    per_label = [_ratio(2 * t, s + p) for t, s, p in zip(tp, support, predicted, strict=True)]
    return micro, float(np.mean(per_label)) if per_label else 0.0
