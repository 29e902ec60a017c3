"""The embedding task's dev figures against an independent statement of their rule, written here
in numpy loops: a non-finite similarity is wrong, never right, and finite vectors of any size give
their directions' figures."""

import math

import numpy as np
import pytest

from bert_tf.tasks.embedder.task import retrieval_figures, similarity_figures


def _cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    with np.errstate(invalid="ignore"):
        return float(a @ b / max(math.sqrt(a @ a) * math.sqrt(b @ b), 1e-24))


def _expected_retrieval(anchors, positives):
    """The rule: anchor i's rank is 1 + the candidates j != i whose similarity is finite and at
    least its own positive's (a tie against it); an anchor whose own similarity is not finite is
    not found (rank past every cut-off)."""
    n = len(anchors)
    ranks = []
    for i in range(n):
        own = _cosine(anchors[i], positives[i])
        if not math.isfinite(own):
            ranks.append(math.inf)
            continue
        others = [_cosine(anchors[i], positives[j]) for j in range(n) if j != i]
        ranks.append(1 + sum(1 for s in others if math.isfinite(s) and s >= own))
    ranks = np.array(ranks)
    return {"recall_at_1": np.mean(ranks <= 1), "recall_at_10": np.mean(ranks <= 10),
            "mrr_at_10": np.mean([1 / r if r <= 10 else 0.0 for r in ranks])}


def _check(anchors, positives):
    figures = retrieval_figures(anchors, positives)
    expected = _expected_retrieval(anchors, positives)
    assert figures == pytest.approx(expected, abs=1e-12), (figures, expected)
    assert all(0.0 <= value <= 1.0 for value in figures.values()), figures
    return figures


def test_non_finite_similarities_rank_last_and_ties_count_against_the_anchor():
    rng = np.random.default_rng(0)
    anchors = rng.standard_normal((14, 8)).astype(np.float32)
    positives = (anchors + 0.3 * rng.standard_normal((14, 8))).astype(np.float32)
    anchors[2] = np.nan  # its own similarity is NaN: not found
    positives[5, 3] = np.nan  # a NaN candidate for every anchor: below all finite ones
    anchors[7, 0] = np.inf  # an Inf component: a NaN direction
    positives[9] = positives[8]  # two equal positives: anchors 8 and 9 tie, each against itself
    anchors[11] = 0.0  # every similarity 0: the right one ties with all
    figures = _check(anchors, positives)
    assert 0.0 < figures["recall_at_1"] < 1.0

    # All NaN: nothing is found (no longer recall 1.0 and an mrr of inf), however few the pairs.
    for n in (1, 3, 20):
        nan = np.full((n, 4), np.nan, np.float32)
        assert _check(nan, nan) == {"recall_at_1": 0.0, "recall_at_10": 0.0, "mrr_at_10": 0.0}


def test_finite_vectors_past_float32_squares_give_their_directions_figures():
    rng = np.random.default_rng(1)
    anchors = rng.standard_normal((12, 8)).astype(np.float32)
    positives = (anchors + 0.8 * rng.standard_normal((12, 8))).astype(np.float32)
    scores = rng.standard_normal(12)
    huge = np.float32(1e25)  # finite, but its square is not a float32
    small = _check(anchors, positives)
    assert 0.0 < small["mrr_at_10"] < 1.0
    assert retrieval_figures(anchors * huge, positives * huge) == pytest.approx(small, abs=1e-12)
    sts = similarity_figures(anchors, positives, scores)
    # Within float32's rounding of the products.
    assert similarity_figures(anchors * huge, positives * huge, scores) == pytest.approx(sts, abs=1e-6)
    cosine = [_cosine(a, p) for a, p in zip(anchors, positives, strict=True)]
    rank = lambda x: np.argsort(np.argsort(x))  # noqa: E731 - distinct values here
    assert sts["pearson"] == pytest.approx(np.corrcoef(cosine, scores)[0, 1], abs=1e-9)
    assert sts["spearman"] == pytest.approx(np.corrcoef(rank(cosine), rank(scores))[0, 1], abs=1e-9)


def test_a_non_finite_similarity_or_score_gives_no_correlation():
    rng = np.random.default_rng(2)
    first, second = rng.standard_normal((2, 10, 8)).astype(np.float32)
    scores = np.arange(10.0)  # sorted: NaN similarities in file order would rank as a perfect spearman
    for hit in (first.copy(), np.full_like(first, np.nan)):
        hit[4] = np.nan
        figures = similarity_figures(hit, second, scores)
        assert math.isnan(figures["spearman"]) and math.isnan(figures["pearson"]), figures
    figures = similarity_figures(first, second, np.where(np.arange(10) == 3, np.inf, scores))
    assert math.isnan(figures["spearman"]) and math.isnan(figures["pearson"]), figures
