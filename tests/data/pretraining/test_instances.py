"""The original create_pretraining_data rules, one by one, with scripted or seeded randomness
and expectations worked out by hand."""

import numpy as np
import pytest

from bert_tf.data.pretraining import instances as pi

CLS, SEP, MASK = 2, 3, 4


class ScriptedRandom:
    """Stands in for random.Random: returns the scripted values and checks each call's args."""

    def __init__(self, random=(), randint=()):
        self._random, self._randint = list(random), list(randint)

    def random(self):
        return self._random.pop(0)

    def randint(self, a, b):
        (ea, eb), value = self._randint.pop(0)
        assert (a, b) == (ea, eb), f"randint({a}, {b}) but the script expected randint({ea}, {eb})"
        assert a <= value <= b
        return value

    def done(self):
        return not self._random and not self._randint


def sentence(start, length):
    return np.arange(start, start + length, dtype=np.int32)


# Document 0: sentences of 3, 2 and 4 pieces; document 1: 5 and 1 pieces.
S0, S1, S2 = sentence(100, 3), sentence(200, 2), sentence(300, 4)
T0, T1 = sentence(400, 5), sentence(500, 1)
TOKENS, DOCS = pi.flatten_documents([[S0, S1, S2], [T0, T1]])


def tokens(*parts):
    return np.concatenate([np.atleast_1d(np.asarray(p, np.int32)) for p in parts]).tolist()


def segments(instances, flat=TOKENS):
    """(A ids, B ids, is_random_next) of create_instances_from_document's ranges."""
    return [(flat[a0:a1].tolist(), flat[b0:b1].tolist(), bool(r)) for a0, a1, b0, b1, r in instances]


def test_flatten_documents_drops_empty_sentences_and_documents():
    flat, docs = pi.flatten_documents([[S0, sentence(0, 0), S1], [], [sentence(0, 0)], [T1]])
    assert flat.tolist() == tokens(S0, S1, T1) and docs == [[0, 3, 5], [5, 6]]
    assert DOCS == [[0, 3, 5, 9], [9, 14, 15]]


def test_actual_next_sentence():
    # target = 12 - 3 = 9 (no short sequence); the chunk fills at S2 (3 + 2 + 4 = 9); A = first
    # 2 sentences (randint(1, 2) -> 2); random() = 0.7 >= 0.5: B is the rest of the chunk.
    rng = ScriptedRandom(random=[0.5, 0.7], randint=[((1, 2), 2)])
    out = pi.create_instances_from_document(DOCS, 0, 12, 0.1, rng)
    assert rng.done()
    assert segments(out) == [(tokens(S0, S1), tokens(S2), False)]


def test_random_next_sentence_puts_unused_sentences_back():
    rng = ScriptedRandom(
        random=[0.5, 0.2, 0.9],
        randint=[
            ((1, 2), 1),  # A = S0
            ((0, 1), 1),  # random document 1 (not 0: accepted at once)
            ((0, 1), 0),  # start at its first sentence; T0 (5) < 9 - 3, so T1 too
            ((1, 1), 1),  # after S1, S2 were put back: chunk [S1, S2] at the end, A = S1
        ],
    )
    out = pi.create_instances_from_document(DOCS, 0, 12, 0.1, rng)
    assert rng.done()
    assert segments(out) == [
        (tokens(S0), tokens(T0, T1), True),
        (tokens(S1), tokens(S2), False),  # random() = 0.9: actual next
    ]


def test_short_target_and_single_sentence_chunk_always_takes_a_random_b():
    # random() = 0.05 < short_seq_prob: target = randint(2, 9) = 2, so each sentence closes a
    # chunk of one, and a one-sentence chunk takes B from another document without a draw.
    rng = ScriptedRandom(
        random=[0.05],
        randint=[
            ((2, 9), 2),
            ((0, 1), 0),  # chunk [T0]: random document 0
            ((0, 2), 1),  # from S1; target_b = 2 - 5 < 0, so S1 alone
            ((0, 1), 1),  # chunk [T1]: document 1 is this one: draw again
            ((0, 1), 0),
            ((0, 2), 2),  # from S2 (4 >= 2 - 1)
        ],
    )
    out = pi.create_instances_from_document(DOCS, 1, 12, 0.1, rng)
    assert rng.done()
    assert segments(out) == [(tokens(T0), tokens(S1), True), (tokens(T1), tokens(S2), True)]


def test_random_b_runs_to_the_end_of_its_document_when_short():
    # A = S0 (3); target_b = 9 - 3 = 6; document 1 from T1 (1 piece): its end comes first.
    rng = ScriptedRandom(random=[0.5, 0.2, 0.9], randint=[((1, 2), 1), ((0, 1), 1), ((0, 1), 1), ((1, 1), 1)])
    out = pi.create_instances_from_document(DOCS, 0, 12, 0.1, rng)
    assert segments(out)[0] == (tokens(S0), tokens(T1), True)


def test_random_document_is_retried_up_to_ten_times():
    # A one-document corpus: ten draws of the same document, then B comes from it anyway.
    flat, docs = pi.flatten_documents([[T0]])
    rng = ScriptedRandom(random=[0.5], randint=[((0, 0), 0)] * 10 + [((0, 0), 0)])
    out = pi.create_instances_from_document(docs, 0, 12, 0.1, rng)
    assert rng.done() and segments(out, flat) == [(tokens(T0), tokens(T0), True)]


def _original_truncation(len_a, len_b, max_num_tokens, coin):
    """The original truncate_seq_pair on lists, `coin()` < 0.5 meaning the front."""
    a, b = list(range(len_a)), list(range(len_b))
    while len(a) + len(b) > max_num_tokens:
        trunc = a if len(a) > len(b) else b
        if coin() < 0.5:
            del trunc[0]
        else:
            trunc.pop()
    return a, b


def test_truncated_lengths_match_the_original_loop():
    for m in (2, 3, 9, 10, 125):
        for la in range(1, 40):
            for lb in range(1, 40):
                a, b = _original_truncation(la, lb, m, lambda: 0.9)
                assert pi.truncated_lengths(np.array([la]), np.array([lb]), m) == (len(a), len(b)), (la, lb, m)


def test_truncation_removes_front_or_back_at_random():
    # A = 30, B = 4, max 20: A loses 14, B nothing; front removals of A ~ Binomial(14, 1/2), as
    # the original's loop (simulated here with random coins) gives.
    n = 20000
    spans = np.tile(np.array([[100, 130, 500, 504, 1]]), (n, 1))
    ranges = pi.truncate_pairs(spans, 20, np.random.default_rng(0))
    assert (ranges[:, 1] - ranges[:, 0] == 16).all() and (ranges[:, 2:] == [500, 504]).all()
    fronts = ranges[:, 0] - 100
    rng = np.random.default_rng(1)
    reference = [_original_truncation(30, 4, 20, rng.random)[0][0] for _ in range(n)]
    ours, theirs = np.bincount(fronts, minlength=15) / n, np.bincount(reference, minlength=15) / n
    assert np.abs(ours - theirs).max() < 0.015
    # Two long segments, 11 and 9 with max 6: both lose tokens (A 8, B 6) and each keeps a
    # contiguous run of its own tokens.
    ranges = pi.truncate_pairs(np.array([[0, 11, 50, 59, 0]] * 100), 6, np.random.default_rng(2))
    assert ((ranges[:, 1] - ranges[:, 0]) == 3).all() and ((ranges[:, 3] - ranges[:, 2]) == 3).all()
    assert (ranges[:, 0] >= 0).all() and (ranges[:, 1] <= 11).all() and (ranges[:, 2] >= 50).all()
    assert len(set(ranges[:, 0].tolist())) > 3


def test_pack_instances_lays_out_cls_a_sep_b_sep():
    a = DOCS[0]
    ranges = np.array([[a[0], a[1], 14, 15], [a[1], a[2], a[2], a[3]]])  # (S0, T1), (S1, S2)
    ids, segments_, lengths = pi.pack_instances(TOKENS, ranges, 12, CLS, SEP)
    assert ids.tolist() == [
        tokens(CLS, S0, SEP, T1, SEP, [0] * 5),
        tokens(CLS, S1, SEP, S2, SEP, [0] * 3),
    ]
    assert segments_.tolist() == [[0] * 5 + [1] * 2 + [0] * 5, [0] * 4 + [1] * 5 + [0] * 3]
    assert lengths.tolist() == [7, 9]


def test_create_instances_covers_every_document_each_pass():
    import random

    flat, docs = pi.flatten_documents([[sentence(10 * d, 4)] * 3 for d in range(6)])
    spans = pi.create_instances(docs, 12, 0.0, 3, random.Random(0))
    assert spans.shape[1] == 5 and spans.dtype == np.int64
    # Every instance's A is a run of sentences of one document.
    owner = np.searchsorted([d[-1] for d in docs], spans[:, 0], side="right")
    assert all(docs[o][0] <= a0 < a1 <= docs[o][-1] for o, (a0, a1) in zip(owner, spans[:, :2], strict=True))
    assert set(owner.tolist()) == set(range(6))


@pytest.mark.parametrize(
    "length, prob, max_predictions, expected",
    [(10, 0.15, 20, 2), (30, 0.15, 20, 4), (50, 0.15, 20, 8), (3, 0.15, 20, 1), (128, 0.15, 20, 19), (128, 0.15, 5, 5)],
)
def test_num_to_predict_rounds_half_to_even(length, prob, max_predictions, expected):
    # 10 * 0.15 = 1.5 -> 2; 30 * 0.15 = 4.5 -> 4; 50 * 0.15 = 7.5 -> 8 (Python's round).
    assert pi.num_to_predict([length], prob, max_predictions)[0] == expected


def _batch(rows, seq):
    ids = np.zeros((len(rows), seq), np.int32)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
    return ids, np.array([len(r) for r in rows])


def test_masking_rules_hold_on_every_instance():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(400):
        a, b = rng.integers(1, 40), rng.integers(1, 40)
        rows.append([CLS, *rng.integers(10, 50, a), SEP, *rng.integers(10, 50, b), SEP])
    ids, lengths = _batch(rows, 83)
    config = pi.MaskingConfig(CLS, SEP, MASK, vocab_size=50, max_predictions_per_seq=20)
    masked, positions, labels, weights = pi.mask_instances(ids, lengths, config, rng)
    for r, row in enumerate(rows):
        n = int(weights[r].sum())
        assert n == min(20, max(1, round(len(row) * 0.15)))
        assert weights[r, :n].all() and not weights[r, n:].any()
        pos = positions[r, :n]
        assert (np.diff(pos) > 0).all() and (positions[r, n:] == 0).all() and (labels[r, n:] == 0).all()
        assert all(row[p] not in (CLS, SEP) for p in pos)
        assert labels[r, :n].tolist() == [row[p] for p in pos]
        untouched = np.setdiff1d(np.arange(83), pos)
        assert (masked[r, untouched] == ids[r, untouched]).all()


def test_replacements_are_80_10_10_and_choices_uniform():
    rng = np.random.default_rng(1)
    n, seq = 20000, 12
    ids = np.tile(np.array([CLS, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, SEP], np.int32), (n, 1))
    config = pi.MaskingConfig(CLS, SEP, MASK, vocab_size=1000, masked_lm_prob=0.25, max_predictions_per_seq=5)
    masked, positions, labels, weights = pi.mask_instances(ids, np.full(n, seq), config, rng)
    assert weights.sum() == n * 3  # round(12 * 0.25) = 3
    real = weights > 0
    picked = masked[np.arange(n)[:, None], positions][real]
    share_mask = np.mean(picked == MASK)
    share_same = np.mean(picked == labels[real])  # kept, or a random id that happens to match
    assert abs(share_mask - 0.8) < 0.01 and abs(share_same - (0.1 + 0.1 / 1000)) < 0.01
    counts = np.bincount(positions[real], minlength=seq)
    assert counts[0] == 0 and counts[11] == 0  # never [CLS] / [SEP]
    counts = counts[1:11]  # the 10 candidates
    assert counts.min() > 0.95 * n * 3 / 10 and counts.max() < 1.05 * n * 3 / 10


def test_whole_word_masking():
    # Words: [10 ##11 ##12] [13] [14] after [CLS]; k = 2 (round(13 * 0.15) = 2): the 3-piece word
    # never fits, so the two single-piece words are always the ones masked.
    vocab_size = 30
    is_continuation = np.zeros(vocab_size, bool)
    is_continuation[[11, 12, 21]] = True
    config = pi.MaskingConfig(CLS, SEP, MASK, vocab_size, max_predictions_per_seq=20, is_continuation=is_continuation)
    row = [CLS, 10, 11, 12, 13, 14, SEP, 15, 16, 17, 18, 19, SEP]
    ids, lengths = _batch([row] * 50, 13)
    _, positions, _, weights = pi.mask_instances(ids, lengths, config, np.random.default_rng(2))
    chosen = {tuple(positions[r, : int(weights[r].sum())]) for r in range(50)}
    assert all(len(c) == 2 and not set(c) & {1, 2, 3} for c in chosen)
    # A "##" piece right after [SEP] joins the last word of A, as the original groups by
    # candidate order: [14 ##21] is one word here, masked together or not at all.
    row = [CLS, 10, 13, 14, SEP, 21, 15, 16, SEP]
    ids, lengths = _batch([row] * 200, 9)
    config = pi.MaskingConfig(CLS, SEP, MASK, vocab_size, masked_lm_prob=0.3, is_continuation=is_continuation)
    _, positions, _, weights = pi.mask_instances(ids, lengths, config, np.random.default_rng(3))
    for r in range(200):
        pos = set(positions[r, : int(weights[r].sum())].tolist())
        assert (3 in pos) == (5 in pos)


# Table 8 of the paper (Appendix C.2), rows MASK/SAME/RND 80/10/10, 100/0/0, 80/0/20, 80/20/0,
# 0/20/80 and 0/0/100, as ([MASK], random) shares; the rest (SAME) keep their token.
TABLE_8 = [(0.8, 0.1), (1.0, 0.0), (0.8, 0.2), (0.8, 0.0), (0.0, 0.8), (0.0, 1.0)]


@pytest.mark.parametrize("mask_share, random_share", TABLE_8)
def test_other_splits_keep_the_positions_and_replace_in_their_shares(mask_share, random_share):
    n, seq, vocab_size = 20000, 12, 1000
    ids = np.tile(np.array([CLS, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, SEP], np.int32), (n, 1))
    base = pi.MaskingConfig(CLS, SEP, MASK, vocab_size=vocab_size, masked_lm_prob=0.25, max_predictions_per_seq=5)
    config = pi.MaskingConfig(
        CLS, SEP, MASK, vocab_size, 0.25, 5, mask_token_prob=mask_share, random_token_prob=random_share
    )
    default = pi.mask_instances(ids, np.full(n, seq), base, np.random.default_rng(4))
    masked, positions, labels, weights = pi.mask_instances(ids, np.full(n, seq), config, np.random.default_rng(4))
    # Same seed: the same positions, labels and weights as the default split.
    for ours, theirs in zip((positions, labels, weights), default[1:], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    real = weights > 0
    picked = masked[np.arange(n)[:, None], positions][real]
    chosen = np.zeros_like(ids, bool)
    chosen[np.nonzero(real)[0], positions[real]] = True
    assert (masked[~chosen] == ids[~chosen]).all()  # the rest untouched
    # A random id is any of the vocab: it is [MASK] or the token itself 1/vocab_size of the time.
    keep_share = 1 - mask_share - random_share
    expected = {
        "mask": mask_share + random_share / vocab_size,
        "same": keep_share + random_share / vocab_size,
        "other": random_share * (1 - 2 / vocab_size),
    }
    observed = {
        "mask": np.mean(picked == MASK),
        "same": np.mean(picked == labels[real]),
        "other": np.mean((picked != MASK) & (picked != labels[real])),
    }
    draws = real.sum()  # 60,000 chosen tokens: 5 standard deviations of a binomial share
    for name, p in expected.items():
        assert abs(observed[name] - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-12, (name, observed[name], p)


@pytest.mark.parametrize(
    "mask_share, random_share, message",
    [
        (-0.1, 0.1, r"mask_token_prob=-0.1 must be in \[0, 1\]"),
        (0.8, 1.5, r"random_token_prob=1.5 must be in \[0, 1\]"),
        (float("nan"), 0.1, r"mask_token_prob=nan must be in \[0, 1\]"),
        (0.9, 0.2, r"mask_token_prob=0.9 \+ random_token_prob=0.2 = 1.1 is above 1"),
    ],
)
def test_a_split_must_be_shares_that_add_up_to_at_most_one(mask_share, random_share, message):
    with pytest.raises(ValueError, match=message):
        pi.check_replacement_split(mask_share, random_share)


def test_splits_that_add_up_to_one_are_accepted():
    for mask_share, random_share in [(0.7, 0.3), (0.15, 0.85), (0.0, 1.0), (1.0, 0.0), (0.8, 0.2)]:
        pi.check_replacement_split(mask_share, random_share)


def test_without_next_sentence_instances_are_runs_of_one_documents_sentences():
    # max_seq_length 12: 10 tokens besides [CLS] and [SEP]; random() = 0.5: that full target;
    # S0 + S1 + S2 = 9 pieces: one instance of the whole document, no other draw.
    rng = ScriptedRandom(random=[0.5])
    out = pi.create_instances_from_document(DOCS, 0, 12, 0.1, rng, next_sentence=False)
    assert rng.done() and segments(out) == [(tokens(S0, S1, S2), [], False)]
    # Target 5 (max_seq_length 7): S0 + S1 reach it; S2 ends the document.
    rng = ScriptedRandom(random=[0.5])
    out = pi.create_instances_from_document(DOCS, 0, 7, 0.1, rng, next_sentence=False)
    assert rng.done() and segments(out) == [(tokens(S0, S1), [], False), (tokens(S2), [], False)]
    # A short target (random() < short_seq_prob): randint(2, 10) = 2, one sentence each.
    rng = ScriptedRandom(random=[0.05], randint=[((2, 10), 2)])
    out = pi.create_instances_from_document(DOCS, 0, 12, 0.1, rng, next_sentence=False)
    assert rng.done() and segments(out) == [(tokens(S0), [], False), (tokens(S1), [], False), (tokens(S2), [], False)]


def test_single_segments_are_cls_a_sep_with_segment_ids_0():
    a = DOCS[0]
    ranges = np.array([[a[0], a[2]], [a[2], a[3]]])  # S0 S1, S2
    ids, segments_, lengths = pi.pack_instances(TOKENS, ranges, 10, CLS, SEP)
    assert ids.tolist() == [tokens(CLS, S0, S1, SEP, [0] * 3), tokens(CLS, S2, SEP, [0] * 4)]
    assert not segments_.any() and lengths.tolist() == [7, 6]
    # A segment over the budget (max_seq_length - 2) is cut as the original cuts pairs.
    spans = np.array([[a[0], a[3], a[3], a[3], 0]] * 200)  # 9 pieces, 6 fit
    cut = pi.truncate_pairs(spans, 6, np.random.default_rng(0))
    assert ((cut[:, 1] - cut[:, 0]) == 6).all() and (cut[:, 2] == cut[:, 3]).all()
    assert set(cut[:, 0].tolist()) == {0, 1, 2, 3}
