"""The official SQuAD v1.1/v2.0 metrics on hand-worked cases."""

import json

import pytest

from bert_tf.tasks.squad import metrics as sm


def _dataset(*questions):
    """SQuAD articles from (qid, [gold answer texts]) pairs, one paragraph."""
    qas = [
        {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
        for qid, golds in questions
    ]
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def test_normalize_answer():
    assert sm.normalize_answer("The Cat.") == "cat"
    assert sm.normalize_answer("  An apple,  a\tday!") == "apple day"
    assert sm.normalize_answer("theory") == "theory"  # articles only as whole words
    assert sm.normalize_answer("the") == ""


def test_v1_exact_and_f1():
    assert sm.exact_match_score_v1("The Cat.", "cat")
    assert not sm.exact_match_score_v1("cats", "cat")
    # pred {quick, brown, fox} vs gold {quick, fox, jumps}: 2 shared, P = R = 2/3.
    assert sm.f1_score_v1("the quick brown fox", "quick fox jumps") == pytest.approx(2 / 3)
    # pred [red, red, blue] vs gold [red, blue, green, yellow]: shared red x1 + blue = 2,
    # P = 2/3, R = 2/4, F1 = 2PR/(P+R) = 4/7.
    assert sm.f1_score_v1("red red blue", "red blue green yellow") == pytest.approx(4 / 7)
    assert sm.f1_score_v1("", "cat") == 0
    assert sm.f1_score_v1("", "the") == 0  # v1.1: no tokens never scores


def test_v1_evaluate_takes_the_best_gold_and_scores_missing_as_zero():
    articles = _dataset(
        ("a", ["cat", "the black cat"]),  # "black cat" exact on the second gold
        ("b", ["quick fox jumps"]),  # F1 2/3
        ("c", ["dog"]),  # no prediction: 0, still counted
    )
    predictions = {"a": "Black cat!", "b": "the quick brown fox", "unused": "x"}
    result = sm.evaluate_v1(articles, predictions)
    assert list(result) == ["exact_match", "f1"]
    assert result["exact_match"] == pytest.approx(100 * 1 / 3)
    assert result["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert sm.missing_predictions(articles, predictions) == ["c"]


def test_v2_exact_and_f1_with_no_answer():
    assert sm.compute_f1("", "") == 1 and sm.compute_exact("", "") == 1
    assert sm.compute_f1("", "Paris") == 0 and sm.compute_f1("Paris", "") == 0
    assert sm.compute_f1("the", "") == 1  # "the" has no tokens either
    assert sm.compute_f1("big red dog", "red") == pytest.approx(0.5)  # P 1, R 1/3


def _four_questions():
    """Hand-worked v2.0 case: two answerable, two unanswerable questions.

    q1 answerable, predicted right (exact 1, f1 1), na 0.1
    q2 answerable, "red" for "big red dog" (exact 0, f1 0.5), na 0.6
    q3 unanswerable, predicted "foo" (0, 0), na 0.7
    q4 unanswerable, predicted "" (1, 1), na 0.8
    """
    articles = _dataset(("q1", ["Paris"]), ("q2", ["big red dog"]), ("q3", []), ("q4", []))
    predictions = {"q1": "paris", "q2": "red", "q3": "foo", "q4": ""}
    na_probs = {"q1": 0.1, "q2": 0.6, "q3": 0.7, "q4": 0.8}
    return articles, predictions, na_probs


def test_v2_evaluate_four_questions_worked_by_hand():
    articles, predictions, na_probs = _four_questions()
    result = sm.evaluate_v2(articles, predictions, na_probs)
    assert list(result) == [
        "exact", "f1", "total",
        "HasAns_exact", "HasAns_f1", "HasAns_total",
        "NoAns_exact", "NoAns_f1", "NoAns_total",
        "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh",
    ]  # fmt: skip
    # Nothing is above the default threshold 1.0: exact 1+0+0+1, f1 1+0.5+0+1.
    assert result["exact"] == 50.0 and result["f1"] == 62.5 and result["total"] == 4
    assert (result["HasAns_exact"], result["HasAns_f1"], result["HasAns_total"]) == (50.0, 75.0, 2)
    assert (result["NoAns_exact"], result["NoAns_f1"], result["NoAns_total"]) == (50.0, 50.0, 2)
    # Threshold sweep, starting from 2 (both unanswerable right), in na order q1 q2 q3 q4:
    #   exact: +1 (3, at 0.1), +0 (3), -1 for q3's non-empty answer (2), +0 (2) -> 3/4 at 0.1
    #   f1:    +1 (3, at 0.1), +0.5 (3.5, at 0.6), -1 (2.5), +0 (2.5)     -> 3.5/4 at 0.6
    assert (result["best_exact"], result["best_exact_thresh"]) == (75.0, 0.1)
    assert (result["best_f1"], result["best_f1_thresh"]) == (87.5, 0.6)


def test_v2_no_answer_threshold():
    articles, predictions, na_probs = _four_questions()
    # Above 0.5: q2 counts as "" (answerable: 0), q3 and q4 as "" (unanswerable: 1).
    result = sm.evaluate_v2(articles, predictions, na_probs, na_prob_thresh=0.5)
    assert (result["exact"], result["f1"]) == (75.0, 75.0)
    assert (result["HasAns_exact"], result["NoAns_exact"]) == (50.0, 100.0)


def test_v2_without_na_probs_and_with_a_missing_prediction():
    articles, predictions, _ = _four_questions()
    del predictions["q2"]  # left out of every total, as the official does
    # Gold texts that normalise to nothing are dropped: "The" alone leaves q5 unanswerable.
    articles[0]["paragraphs"][0]["qas"].append({"id": "q5", "answers": [{"text": "The", "answer_start": 0}]})
    predictions["q5"] = ""
    result = sm.evaluate_v2(articles, predictions)
    assert dict(result) == {
        "exact": 75.0, "f1": 75.0, "total": 4,
        "HasAns_exact": 100.0, "HasAns_f1": 100.0, "HasAns_total": 2,  # q1, q5 (has an answer)
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
    }  # fmt: skip
    assert sm.missing_predictions(articles, predictions) == ["q2"]


def test_v2_errors():
    articles, predictions, na_probs = _four_questions()
    del na_probs["q3"]
    with pytest.raises(ValueError, match=r"missing for 1 predicted questions, e.g. 'q3'"):
        sm.evaluate_v2(articles, predictions, na_probs)
    with pytest.raises(ValueError, match="no prediction"):
        sm.evaluate_v2(articles, {"other": "x"})


def _write(path, value):
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


def test_evaluate_picks_the_version_from_the_file(tmp_path):
    articles, predictions, na_probs = _four_questions()
    v2 = _write(tmp_path / "dev-v2.0.json", {"version": "v2.0", "data": articles})
    v1 = _write(tmp_path / "dev-v1.1.json", {"version": "1.1", "data": _dataset(("a", ["The Cat."]))})
    assert sm.evaluate(v2, predictions, na_probs) == sm.evaluate_v2(articles, predictions, na_probs)
    assert dict(sm.evaluate(v1, {"a": "cat"})) == {"exact_match": 100.0, "f1": 100.0}
    with pytest.raises(ValueError, match="'q3' has no gold answer: SQuAD 2.0 data needs the 2.0 metrics"):
        sm.evaluate(v2, predictions, version="1.1")
    assert list(sm.evaluate(v1, {"a": "cat"}, version="2.0"))[:3] == ["exact", "f1", "total"]
    with pytest.raises(ValueError, match="2.0 only"):
        sm.evaluate(v1, {"a": "cat"}, na_probs={"a": 0.5})
    with pytest.raises(ValueError, match="version '3'"):
        sm.evaluate(v1, {"a": "cat"}, version="3")


def test_file_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset file .*nope.json.* does not exist"):
        sm.load_dataset(str(tmp_path / "nope.json"))
    bad = _write(tmp_path / "bad.json", "{not json")
    with pytest.raises(ValueError, match="bad.json.* is not valid JSON"):
        sm.load_dataset(bad)
    with pytest.raises(ValueError, match="list.json.* no \"data\""):
        sm.load_dataset(_write(tmp_path / "list.json", [1, 2]))
    with pytest.raises(ValueError, match="odd.json.* not laid out as SQuAD"):
        sm.load_dataset(_write(tmp_path / "odd.json", {"data": [{"paragraphs": [{"qas": [{"answers": []}]}]}]}))
    with pytest.raises(ValueError, match=r"preds.json.* is not a JSON object of \{question id: answer text\}"):
        sm.load_predictions(_write(tmp_path / "preds.json", ["a", "b"]))
    with pytest.raises(ValueError, match="preds2.json"):
        sm.load_predictions(_write(tmp_path / "preds2.json", {"a": ["nbest", "list"]}))
    with pytest.raises(ValueError, match="na.json"):
        sm.load_na_probs(_write(tmp_path / "na.json", {"a": "high"}))
    assert sm.load_na_probs(_write(tmp_path / "na_ok.json", {"a": 1, "b": 0.5})) == {"a": 1, "b": 0.5}
