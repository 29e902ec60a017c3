"""SQuAD post-processing against hand-worked cases and a brute-force restatement of the original
run_squad.py rules (top-n starts x top-n ends, validity filters, score order, n-best dedup,
v2.0 null answer and threshold)."""

import json
import os
import random
from types import SimpleNamespace

import numpy as np
import pytest

from bert_tf.tasks.squad.predictions import example_prediction, get_final_text, write_predictions

MAX_SEQ = 10


def _feature(tokens, token_to_orig_map, max_context):
    return SimpleNamespace(
        unique_id=None, tokens=tokens, token_to_orig_map=token_to_orig_map, token_is_max_context=max_context
    )


def _logits(values, fill=-10.0):
    """A max_seq_length list of `fill` with `values` ({index: logit}) set."""
    out = [fill] * MAX_SEQ
    for index, value in values.items():
        out[index] = float(value)
    return out


def _softmax(scores):
    e = np.exp(np.asarray(scores, dtype=np.float64) - max(scores))
    return e / e.sum()


def _texts_and_logits(nbest):
    return [(e["text"], e["start_logit"], e["end_logit"]) for e in nbest]


def _predict(example, items, n_best_size=3, max_answer_length=30, v2=False, threshold=0.0, lower=True):
    return example_prediction(example, items, n_best_size, max_answer_length, lower, v2, threshold)


# ---- get_final_text ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pred, orig, lower, expected",
    [
        ("elan", "Élan", True, "Élan"),  # accent stripped by the tokenizer, restored from orig
        ("1999", "(1999).", True, "1999"),  # punctuation split off, not part of the answer
        ("steve smith", "Steve Smith's", True, "Steve Smith"),
        ("Steve", "Steve Smith's", False, "Steve"),  # cased model: exact characters
        ("steve", "Steve Smith's", False, "Steve Smith's"),  # cased: "steve" not found
        ("john", "Steve Smith's", True, "Steve Smith's"),  # not found: orig_text
        # "e" + combining accent: the tokenizer drops a character, so the alignment fails.
        ("cafe", "Cafe\u0301 (Paris)", True, "Cafe\u0301 (Paris)"),
    ],
)
def test_get_final_text(pred, orig, lower, expected):
    assert get_final_text(pred, orig, lower) == expected


# ---- hand cases -------------------------------------------------------------------------------


def test_max_context_picks_the_span_from_the_second_window():
    example = SimpleNamespace(qas_id="q", doc_tokens=["The", "quick", "Brown", "foxes."])
    # Window 1 holds words 0-2; "brown" (token 5) has more context in window 2.
    f1 = _feature(
        ["[CLS]", "who", "[SEP]", "the", "quick", "brown", "[SEP]"], {3: 0, 4: 1, 5: 2}, {3: True, 4: True, 5: False}
    )
    # Window 2 holds words 1-3.
    f2 = _feature(
        ["[CLS]", "who", "[SEP]", "quick", "brown", "fox", "##es", ".", "[SEP]"],
        {3: 1, 4: 2, 5: 3, 6: 3, 7: 3},
        {3: False, 4: True, 5: True, 6: True, 7: True},
    )
    # Window 1: top-3 starts 8 (padding), 5 (not max context: its 9+9 never counts), 4;
    # top-3 ends 9 (padding), 5, 4 -> "quick brown" = -1+9 = 8, "quick" = -1+3 = 2.
    items = [
        (f1, _logits({5: 9, 4: -1, 8: 20}), _logits({5: 9, 4: 3, 9: 20})),
        # Window 2: top-3 starts 3 (not max context), 4, 5; top-3 ends 6, 4, 7 ->
        # (4,6) 10, (4,4) 7, (4,7) 5, (5,6) 6, (5,7) 1.
        (f2, _logits({3: 8, 4: 5, 5: 1}), _logits({6: 5, 4: 2, 7: 0})),
    ]
    text, nbest, score_diff = _predict(example, items, n_best_size=3)
    assert text == "Brown foxes"
    assert score_diff is None
    assert _texts_and_logits(nbest) == [("Brown foxes", 5.0, 5.0), ("quick Brown", -1.0, 9.0), ("Brown", 5.0, 2.0)]
    np.testing.assert_allclose([e["probability"] for e in nbest], _softmax([10, 8, 7]), rtol=1e-12)
    assert list(nbest[0]) == ["text", "probability", "start_logit", "end_logit"]

    # With 7 entries allowed, every valid pair shows, by score; "brown fox ##es ." maps back to
    # the whole word "foxes." and "fox ##es ." to "foxes.".
    _, nbest, _ = _predict(example, items, n_best_size=7)
    assert [e["text"] for e in nbest][:5] == ["Brown foxes", "quick Brown", "Brown", "foxes", "Brown foxes."]


def _one_window(words):
    tokens = ["[CLS]", "q", "[SEP]"] + [w.lower() for w in words] + ["[SEP]"]
    return _feature(tokens, {3 + i: i for i in range(len(words))}, {3 + i: True for i in range(len(words))})


def test_max_answer_length_cuts_the_long_pair():
    words = ["one", "two", "three", "four", "five"]
    example = SimpleNamespace(qas_id="q", doc_tokens=words)
    # Top-2 starts 3 ("one"), 4; top-2 ends 7 ("five"), 5 ("three").
    items = [(_one_window(words), _logits({3: 10, 4: 1}), _logits({7: 10, 5: 2}))]
    # (3,7) is 5 pieces long, (4,7) 4: both over 3; left: (3,5) 12, (4,5) 3.
    _, nbest, _ = _predict(example, items, n_best_size=2, max_answer_length=3)
    assert _texts_and_logits(nbest) == [("one two three", 10.0, 2.0), ("two three", 1.0, 2.0)]
    text, nbest, _ = _predict(example, items, n_best_size=2, max_answer_length=5)
    assert text == "one two three four five"
    assert [e["text"] for e in nbest] == ["one two three four five", "one two three"]


def _v2_example():
    example = SimpleNamespace(qas_id="q1", doc_tokens=["Paris", "is", "big"])
    f1 = _one_window(["Paris", "is", "big"])
    f2 = _one_window(["Paris", "is", "big"])
    f2.token_is_max_context = {i: False for i in range(3, 6)}  # gives no span, only a null score
    items = [
        # Null score 1+1 = 2. Top-2 starts 0, 3; top-2 ends 0, 3 (tie, index order): one span,
        # "paris" = -3+1 = -2.
        (f1, _logits({0: 1, 3: -3}, fill=-9), _logits({0: 1, 3: 1}, fill=-9)),
        # Null score -1+0.5 = -0.5: the smaller, so the null answer's.
        (f2, _logits({0: -1}, fill=-9), _logits({0: 0.5}, fill=-9)),
    ]
    return example, items


@pytest.mark.parametrize("threshold, expected", [(0.0, ""), (1.0, ""), (1.5, "Paris"), (2.0, "Paris")])
def test_v2_null_answer_against_the_threshold(threshold, expected):
    example, items = _v2_example()
    text, nbest, score_diff = _predict(example, items, n_best_size=2, v2=True, threshold=threshold)
    assert score_diff == -0.5 - (-3.0) - 1.0 == 1.5  # null - best span start - best span end
    assert text == expected
    assert _texts_and_logits(nbest) == [("", -1.0, 0.5), ("Paris", -3.0, 1.0)]
    np.testing.assert_allclose([e["probability"] for e in nbest], _softmax([-0.5, -2.0]), rtol=1e-12)


def test_v2_adds_the_null_entry_when_the_nbest_list_lacks_it():
    example, items = _v2_example()
    # One entry allowed: "" (-0.5) ranks first, the span never enters the list, and no entry
    # has text (the original fails here): the nonce "empty" (0, 0) stands in as the best span,
    # and the threshold decides between it and "" as usual.
    text, nbest, score_diff = _predict(example, items, n_best_size=1, v2=True)
    assert _texts_and_logits(nbest) == [("", -1.0, 0.5), ("empty", 0.0, 0.0)]
    assert (text, score_diff) == ("empty", -0.5)
    assert _predict(example, items, n_best_size=1, v2=True, threshold=-1.0)[0] == ""

    # A span that outranks the null answer fills the list; "" is added after it anyway.
    example, items = _v2_example()
    items[1] = (items[1][0], _logits({0: 4}), _logits({0: 4}))  # window 2's null score 8
    items[0] = (items[0][0], _logits({0: 4, 3: 6}), _logits({0: 5, 3: 6}))  # null 9, span 12
    text, nbest, score_diff = _predict(example, items, n_best_size=1, v2=True)
    assert _texts_and_logits(nbest) == [("Paris", 6.0, 6.0), ("", 4.0, 4.0)]
    assert (text, score_diff) == ("Paris", 8.0 - 12.0)


def test_no_valid_span_gives_the_empty_nonce():
    words = ["one", "two"]
    example = SimpleNamespace(qas_id="q", doc_tokens=words)
    # The top-2 starts and ends are [CLS] and the question: nothing valid.
    items = [(_one_window(words), _logits({0: 5, 1: 4}), _logits({0: 5, 1: 4}))]
    text, nbest, score_diff = _predict(example, items, n_best_size=2)
    assert (text, score_diff) == ("empty", None)
    assert nbest == [{"text": "empty", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0}]


def test_nbest_keeps_the_first_of_equal_final_texts():
    words = ["Paris", "is", "big"]
    example = SimpleNamespace(qas_id="q", doc_tokens=words)
    window = _one_window(words)
    items = [
        (window, _logits({3: 3, 5: 0}), _logits({3: 2, 5: 0})),  # "paris" 5, "paris is big" 3, "big" 0
        (window, _logits({3: 2}), _logits({3: 2})),  # "paris" again, 4
    ]
    _, nbest, _ = _predict(example, items, n_best_size=2)
    assert _texts_and_logits(nbest) == [("Paris", 3.0, 2.0), ("Paris is big", 3.0, 0.0)]


# ---- brute-force restatement on random logits -------------------------------------------------

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


def reference_predictions(doc_tokens, items, n_best, max_len, v2, threshold):
    """The original rules, restated: every (feature, start, end) among the n best starts x ends,
    ranked by (-score, feature, start rank, end rank); words here are single lower-case pieces,
    so a span's text is its words."""
    candidates = []
    for fi, (f, s, e) in enumerate(items):
        starts = np.argsort(-np.asarray(s), kind="stable")[:n_best]
        ends = np.argsort(-np.asarray(e), kind="stable")[:n_best]
        for si, a in enumerate(starts):
            for ei, b in enumerate(ends):
                a, b = int(a), int(b)
                ok = (
                    a < len(f.tokens) and b < len(f.tokens) and a in f.token_to_orig_map and b in f.token_to_orig_map
                    and f.token_is_max_context.get(a, False) and a <= b < a + max_len
                )
                if ok:
                    text = " ".join(doc_tokens[f.token_to_orig_map[a] : f.token_to_orig_map[b] + 1])
                    candidates.append(((-(s[a] + e[b]), fi, si, ei), text, s[a], e[b]))
    null = min(((s[0] + e[0], fi) for fi, (f, s, e) in enumerate(items)), default=None)
    if v2:
        null_s, null_e = items[null[1]][1][0], items[null[1]][2][0]
        candidates.append(((-null[0], len(items), 0, 0), "", null_s, null_e))
    nbest, seen = [], set()
    for _, text, s, e in sorted(candidates, key=lambda c: c[0]):
        if len(nbest) == n_best:
            break
        if text not in seen:
            seen.add(text)
            nbest.append((text, s, e))
    if v2 and "" not in seen:
        nbest.append(("", null_s, null_e))
    if not any(t for t, _, _ in nbest):
        nbest.append(("empty", 0.0, 0.0))
    if not v2:
        return nbest[0][0], nbest, None
    best = next(n for n in nbest if n[0])
    diff = null[0] - best[1] - best[2]
    return ("" if diff > threshold else best[0]), nbest, diff


@pytest.mark.parametrize("v2", [False, True])
def test_matches_the_restated_rules_on_random_logits(v2):
    rng = random.Random(7 if v2 else 3)
    for _ in range(40):
        doc = WORDS[: rng.randint(3, 8)]
        items = []
        for start in range(0, len(doc), 3):  # windows of up to 4 words, stride 3
            window = range(start, min(start + 4, len(doc)))
            tokens = ["[CLS]", "q", "[SEP]"] + [doc[w] for w in window] + ["[SEP]"]
            feature = _feature(
                tokens,
                {3 + i: w for i, w in enumerate(window)},
                {3 + i: rng.random() < 0.7 for i in range(len(window))},
            )
            # Small integers: many ties, and exact sums; the context tokens a little favoured.
            logits = [
                [float(rng.randint(-1, 4) if 3 <= i < len(tokens) - 1 else rng.randint(-3, 2)) for i in range(MAX_SEQ)]
                for _ in range(2)
            ]
            items.append((feature, *logits))
        n_best, max_len, threshold = rng.randint(1, 6), rng.randint(1, 3), float(rng.randint(-2, 2))
        text, nbest, diff = _predict(SimpleNamespace(doc_tokens=doc), items, n_best, max_len, v2, threshold)
        ref_text, ref_nbest, ref_diff = reference_predictions(doc, items, n_best, max_len, v2, threshold)
        assert (text, _texts_and_logits(nbest), diff) == (ref_text, ref_nbest, ref_diff)
        np.testing.assert_allclose(
            [e["probability"] for e in nbest], _softmax([s + e for _, s, e in ref_nbest]), rtol=1e-12
        )


# ---- files ------------------------------------------------------------------------------------


def _items():
    """Two v2.0 examples, as a generator: q1 (null wins, score_diff 1.5) and q2 (a span)."""
    yield _v2_example()
    example = SimpleNamespace(qas_id="q2", doc_tokens=["Élan", "vital"])
    feature = _feature(["[CLS]", "q", "[SEP]", "elan", "vital", "[SEP]"], {3: 0, 4: 1}, {3: True, 4: True})
    # Top-2 starts 3, 0; ends 3, 0: the span "elan" = 2+1 = 3, the null answer 0+0.
    yield example, [(feature, _logits({0: 0, 3: 2}, fill=-9), _logits({0: 0, 3: 1}, fill=-9))]


def _probabilities(nbest_text):
    return [entry["probability"] for nbest in json.loads(nbest_text).values() for entry in nbest]


def _without_probabilities(nbest_text):
    return [line for line in nbest_text.split("\n") if '"probability"' not in line]


def test_write_predictions_files_in_the_original_format(tmp_path):
    paths = [str(tmp_path / name) for name in ("predictions.json", "nbest_predictions.json", "null_odds.json")]
    predictions = write_predictions(_items(), *paths, 2, 30, True, True, 0.0)
    assert list(predictions.items()) == [("q1", ""), ("q2", "Élan")]

    assert open(paths[0]).read() == '{\n    "q1": "",\n    "q2": "\\u00c9lan"\n}\n'
    p1, p2 = _softmax([-0.5, -2.0]), _softmax([3.0, 0.0])
    entry = (
        '        {{\n            "text": "{}",\n            "probability": {!r},\n'
        '            "start_logit": {!r},\n            "end_logit": {!r}\n        }}'
    )
    expected_nbest = (
        '{\n    "q1": [\n'
        + entry.format("", float(p1[0]), -1.0, 0.5) + ",\n" + entry.format("Paris", float(p1[1]), -3.0, 1.0)
        + '\n    ],\n    "q2": [\n'
        + entry.format("\\u00c9lan", float(p2[0]), 2.0, 1.0) + ",\n" + entry.format("", float(p2[1]), 0.0, 0.0)
        + "\n    ]\n}\n"
    )
    nbest_text = open(paths[1]).read()
    # The probabilities may differ in the last bit from numpy's: the rest must match exactly.
    np.testing.assert_allclose(_probabilities(nbest_text), _probabilities(expected_nbest), rtol=1e-12)
    assert _without_probabilities(nbest_text) == _without_probabilities(expected_nbest)
    assert nbest_text.endswith("}\n")
    assert open(paths[2]).read() == '{\n    "q1": 1.5,\n    "q2": -3.0\n}\n'
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in paths)  # no temp files


def test_write_predictions_v1_writes_no_null_odds_and_takes_numpy_logits(tmp_path):
    words = ["one", "two"]
    items = [(_one_window(words), np.array(_logits({3: 1.5}), np.float32), np.array(_logits({4: 0.25}), np.float32))]
    out = [str(tmp_path / "p.json"), str(tmp_path / "n.json")]
    examples = iter([(SimpleNamespace(qas_id="a", doc_tokens=words), items)])
    predictions = write_predictions(examples, *out, None, 20, 30, True, False, 0.0)
    assert predictions == {"a": "one two"}
    assert sorted(os.listdir(tmp_path)) == ["n.json", "p.json"]
    nbest = json.loads((tmp_path / "n.json").read_text())["a"]
    assert (nbest[0]["start_logit"], nbest[0]["end_logit"]) == (1.5, 0.25)


def test_write_predictions_rejects_bad_settings(tmp_path):
    with pytest.raises(ValueError, match="n_best_size 0"):
        write_predictions([], "p", "n", "o", 0, 30, True, False, 0.0)
    with pytest.raises(ValueError, match="null_log_odds"):
        write_predictions([], "p", "n", None, 20, 30, True, True, 0.0)
