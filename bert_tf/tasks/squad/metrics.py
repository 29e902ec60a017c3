"""The official SQuAD metrics: evaluate-v1.1.py (exact match, F1) and evaluate-v2.0.py (exact,
F1, HasAns/NoAns breakdown, no-answer thresholds), with the same numbers and output keys.

Both compare answers after the same normalisation (lower case, punctuation and the articles
a/an/the removed, whitespace collapsed), take the best score over a question's gold answers and
report percentages. They differ where the official scripts differ:
  v1.1: a question without a prediction scores 0 and counts in the total; a prediction "" scores
    0 against every gold answer.
  v2.0: a question without gold answers (unanswerable) has the single gold answer ""; "" against
    "" scores 1; questions without a prediction are left out of the totals.
"""

import collections
import json
import os
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower case, drop ASCII punctuation, replace the articles a/an/the by spaces, collapse
    whitespace (the official order of steps)."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _token_f1(gold_tokens, pred_tokens):
    common = collections.Counter(gold_tokens) & collections.Counter(pred_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def _questions(articles):
    """(qid, gold answer texts) of every question, in file order."""
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield qa["id"], [answer["text"] for answer in qa["answers"]]


def missing_predictions(articles, predictions):
    """Ids of the dataset's questions that `predictions` has no answer for, in file order."""
    return [qid for qid, _ in _questions(articles) if qid not in predictions]


# ---- v1.1 -------------------------------------------------------------------------------------


def f1_score_v1(prediction, ground_truth):
    """v1.1 token F1: 0 when nothing is shared (an empty prediction included)."""
    return _token_f1(normalize_answer(ground_truth).split(), normalize_answer(prediction).split())


def exact_match_score_v1(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def evaluate_v1(articles, predictions):
    """evaluate-v1.1.py's numbers: {"exact_match", "f1"} in percent over every question; one
    without a prediction scores 0 (see `missing_predictions` for the official's message)."""
    exact_match = f1 = total = 0
    for qid, ground_truths in _questions(articles):
        total += 1
        if qid not in predictions:
            continue
        if not ground_truths:  # the official fails here
            raise ValueError(f"question {qid!r} has no gold answer: SQuAD 2.0 data needs the 2.0 metrics")
        prediction = predictions[qid]
        exact_match += max(exact_match_score_v1(prediction, gt) for gt in ground_truths)
        f1 += max(f1_score_v1(prediction, gt) for gt in ground_truths)
    if total == 0:
        raise ValueError("the dataset has no questions")
    return collections.OrderedDict([("exact_match", 100.0 * exact_match / total), ("f1", 100.0 * f1 / total)])


# ---- v2.0 -------------------------------------------------------------------------------------


def get_tokens(text):
    return normalize_answer(text).split() if text else []


def compute_exact(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def compute_f1(gold, prediction):
    """v2.0 token F1; when either side has no tokens (no answer) it is 1 if both have none."""
    gold_tokens, pred_tokens = get_tokens(gold), get_tokens(prediction)
    if not gold_tokens or not pred_tokens:
        return int(gold_tokens == pred_tokens)
    return _token_f1(gold_tokens, pred_tokens)


def get_raw_scores(articles, predictions):
    """({qid: exact}, {qid: f1}) for the questions that have a prediction."""
    exact_scores, f1_scores = {}, {}
    for qid, answers in _questions(articles):
        # Gold answers that normalise to nothing do not count; none left means unanswerable.
        gold_answers = [a for a in answers if normalize_answer(a)] or [""]
        if qid not in predictions:
            continue
        prediction = predictions[qid]
        exact_scores[qid] = max(compute_exact(a, prediction) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, prediction) for a in gold_answers)
    return exact_scores, f1_scores


def make_qid_to_has_ans(articles):
    return {qid: bool(answers) for qid, answers in _questions(articles)}


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    """Questions with a no-answer probability above the threshold count as answered "": they
    score 1 when unanswerable, 0 otherwise."""
    return {
        qid: float(not qid_to_has_ans[qid]) if na_probs[qid] > na_prob_thresh else score
        for qid, score in scores.items()
    }


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    qids = list(exact_scores) if not qid_list else qid_list
    total = len(qids)
    return collections.OrderedDict(
        [
            ("exact", 100.0 * sum(exact_scores[q] for q in qids) / total),
            ("f1", 100.0 * sum(f1_scores[q] for q in qids) / total),
            ("total", total),
        ]
    )


def find_best_thresh(predictions, scores, na_probs, qid_to_has_ans):
    """The best score reachable by predicting "" for every question whose no-answer probability
    is above a threshold, and that threshold (the official sweep).

    Start as if every question were answered "" (all unanswerable ones right), then lower the
    bar question by question in increasing probability: an answerable one gains its score, an
    unanswerable one with a non-empty prediction loses its point. As in the official, the start
    counts every unanswerable question but the total only the predicted ones (so with missing
    predictions the best can pass 100).
    """
    score = best_score = sum(1 for has_ans in qid_to_has_ans.values() if not has_ans)
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            score += scores[qid]
        elif predictions[qid]:
            score -= 1
        if score > best_score:
            best_score, best_thresh = score, na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def check_na_probs_cover(articles, predictions, na_probs):
    """Every question with a prediction needs a no-answer probability (the official needs it)."""
    lacking = [qid for qid, _ in _questions(articles) if qid in predictions and qid not in na_probs]
    if lacking:
        raise ValueError(
            f"no-answer probabilities are missing for {len(lacking)} predicted questions, e.g. {lacking[0]!r}"
        )


def evaluate_v2(articles, predictions, na_probs=None, na_prob_thresh=1.0):
    """evaluate-v2.0.py's numbers, in its key order: exact, f1, total, HasAns_{exact,f1,total},
    NoAns_{exact,f1,total} (each part only when the dataset has such questions), and, when
    `na_probs` ({qid: probability of no answer}) is given, best_exact, best_exact_thresh,
    best_f1, best_f1_thresh.

    Questions without a prediction are left out, as the official does (which then crashes on the
    HasAns/NoAns parts; here those parts count only the predicted questions too).
    """
    qid_to_has_ans = make_qid_to_has_ans(articles)
    exact_raw, f1_raw = get_raw_scores(articles, predictions)
    if not exact_raw:
        raise ValueError("no prediction is for a question of the dataset")
    given_na_probs = na_probs is not None
    if not given_na_probs:
        na_probs = {qid: 0.0 for qid in predictions}
    check_na_probs_cover(articles, predictions, na_probs)

    exact = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1 = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out = make_eval_dict(exact, f1)
    for prefix, has_ans in (("HasAns", True), ("NoAns", False)):
        qids = [q for q, v in qid_to_has_ans.items() if v == has_ans and q in exact]
        if qids:
            for key, value in make_eval_dict(exact, f1, qid_list=qids).items():
                out[f"{prefix}_{key}"] = value
    if given_na_probs:
        out["best_exact"], out["best_exact_thresh"] = find_best_thresh(predictions, exact_raw, na_probs, qid_to_has_ans)
        out["best_f1"], out["best_f1_thresh"] = find_best_thresh(predictions, f1_raw, na_probs, qid_to_has_ans)
    return out


# ---- files ------------------------------------------------------------------------------------


def _load_json(path, what):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} {path!r} does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{what} {path!r} is not valid JSON: {e}") from None


def load_dataset(path):
    """(version string, list of articles) of a SQuAD dataset file."""
    value = _load_json(path, "dataset file")
    if not isinstance(value, dict) or not isinstance(value.get("data"), list):
        raise ValueError(f"dataset file {path!r} has no \"data\" list of articles (not a SQuAD file)")
    try:
        for _ in _questions(value["data"]):
            pass
    except (KeyError, TypeError) as e:
        raise ValueError(f"dataset file {path!r} is not laid out as SQuAD (articles/paragraphs/qas): {e!r}") from None
    return str(value.get("version", "")), value["data"]


def check_predictions(predictions, source="predictions"):
    """`predictions` must be {question id: answer text}."""
    if not isinstance(predictions, dict) or not all(isinstance(v, str) for v in predictions.values()):
        raise ValueError(f"{source} is not a JSON object of {{question id: answer text}}")
    return predictions


def load_predictions(path):
    return check_predictions(_load_json(path, "predictions file"), f"predictions file {path!r}")


def check_na_probs(na_probs, source="no-answer probabilities"):
    """`na_probs` must be {question id: number}."""
    if not isinstance(na_probs, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in na_probs.values()
    ):
        raise ValueError(f"{source} is not a JSON object of {{question id: probability}}")
    return na_probs


def load_na_probs(path):
    return check_na_probs(_load_json(path, "na_prob file"), f"na_prob file {path!r}")


def resolve_version(version, dataset_version):
    """"1.1" or "2.0": `version` itself, or for "auto" the dataset's ("v2.0" -> "2.0", else "1.1")."""
    if version not in ("auto", "1.1", "2.0"):
        raise ValueError(f"version {version!r} is not one of auto, 1.1, 2.0")
    if version != "auto":
        return version
    return "2.0" if dataset_version.lstrip("vV").startswith("2") else "1.1"


def evaluate(dataset_path, predictions, na_probs=None, version="auto", na_prob_thresh=1.0):
    """The official metrics of `predictions` ({qid: text}) against the SQuAD file at
    `dataset_path`: evaluate_v1's or evaluate_v2's OrderedDict, per `resolve_version`.
    `na_probs` ({qid: probability of no answer}, e.g. run_squad's null_odds) is for v2.0 only."""
    dataset_version, articles = load_dataset(dataset_path)
    check_predictions(predictions)
    version = resolve_version(version, dataset_version)
    if version == "1.1":
        if na_probs is not None:
            raise ValueError("no-answer probabilities apply to SQuAD 2.0 only (the version here is 1.1)")
        return evaluate_v1(articles, predictions)
    if na_probs is not None:
        check_na_probs(na_probs)
    return evaluate_v2(articles, predictions, na_probs, na_prob_thresh)
