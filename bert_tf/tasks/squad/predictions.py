"""SQuAD post-processing: each feature's start/end logits -> the answer text, the n-best list and
the null odds, with the rules of the original run_squad.py's `write_predictions` (v1.1 and v2.0).

Inputs are duck-typed, with the original's field names:
  example: `.qas_id`, `.doc_tokens` (the context's whitespace-separated words).
  feature: `.tokens` (word pieces, [CLS] first), `.token_to_orig_map` (token index -> word index,
    context tokens only), `.token_is_max_context` (token index -> bool).
  logits: sequences of floats of length max_seq_length (numpy arrays are fine).

An example's features are its document windows (doc_stride), in order; a span is taken only from
the window where its start token has the most context, as the original does.
"""

import collections
import json
import math

from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write
from bert_tf.tokenization import BasicTokenizer

_Prelim = collections.namedtuple(
    "_Prelim", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)
_Entry = collections.namedtuple("_Entry", ["text", "start_logit", "end_logit"])

# The original starts the search for the smallest null score here ("large and positive").
NULL_SCORE_START = 1000000
# The original's answer when no span is left (its nonce n-best entry).
NO_ANSWER = "empty"


def best_indexes(logits, n_best_size):
    """Indexes of the `n_best_size` largest logits, largest first; equal logits keep index order
    (the original's stable `sorted(..., reverse=True)`)."""
    return sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)[:n_best_size]


def compute_softmax(scores):
    """Softmax of a list of floats, shifted by the maximum; [] for []."""
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = 0.0
    for x in exps:  # summed left to right, as the original does, for identical probabilities
        total += x
    return [x / total for x in exps]


def _strip_spaces(text):
    """`text` without " " characters, and each kept character's index in `text`."""
    kept, positions = [], {}
    for i, char in enumerate(text):
        if char != " ":
            positions[len(kept)] = i
            kept.append(char)
    return "".join(kept), positions


def get_final_text(pred_text, orig_text, do_lower_case):
    """The piece of `orig_text` (original words, original casing and accents) that the
    normalised `pred_text` (detokenized word pieces) covers.

    `orig_text` is run through the BasicTokenizer; when the result, spaces removed, has as many
    characters as `orig_text` without spaces, the characters are taken as aligned one to one and
    `pred_text`'s first and last characters are mapped back. E.g. pred "steve smith" in
    "Steve Smith's" gives "Steve Smith". When `pred_text` is not found or the alignment fails
    (the tokenizer dropped or split characters), `orig_text` is returned whole, as in the original.
    """
    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        return orig_text
    tok_s_to_ns = {s: ns for ns, s in tok_ns_to_s.items()}

    def to_orig(position):
        ns = tok_s_to_ns.get(position)
        return None if ns is None else orig_ns_to_s.get(ns)

    orig_start, orig_end = to_orig(start), to_orig(end)
    if orig_start is None or orig_end is None:
        return orig_text
    return orig_text[orig_start : orig_end + 1]


def _detokenize(word_pieces):
    """Word pieces -> text: "##" continuations glued back, whitespace runs made single spaces."""
    text = " ".join(word_pieces).replace(" ##", "").replace("##", "")
    return " ".join(text.split())


def _span_candidates(feature_index, feature, start_logits, end_logits, n_best_size, max_answer_length):
    """Every (start, end) among the n best starts x n best ends that is a valid answer span."""
    for start in best_indexes(start_logits, n_best_size):
        for end in best_indexes(end_logits, n_best_size):
            # Spans in the question, the padding or [CLS]/[SEP] are thrown out, and a start
            # only counts in the window where it has the most context.
            if start >= len(feature.tokens) or end >= len(feature.tokens):
                continue
            if start not in feature.token_to_orig_map or end not in feature.token_to_orig_map:
                continue
            if not feature.token_is_max_context.get(start, False):
                continue
            if end < start or end - start + 1 > max_answer_length:
                continue
            yield _Prelim(feature_index, start, end, start_logits[start], end_logits[end])


def _candidates(features_and_results, n_best_size, max_answer_length, version_2_with_negative):
    """`(features, prelims, score_null, null)`: the example's features; its candidate spans over
    all windows (v2.0: and the null answer), best start + end score first (stable); the null
    score, the smallest [CLS] start + end score over the windows (v2.0); `null`, the null
    answer's `_Prelim` at the window with that score."""
    features, prelims = [], []
    score_null, null = NULL_SCORE_START, _Prelim(0, 0, 0, 0.0, 0.0)
    for feature_index, (feature, start_logits, end_logits) in enumerate(features_and_results):
        start_logits = [float(x) for x in start_logits]
        end_logits = [float(x) for x in end_logits]
        features.append(feature)
        if version_2_with_negative and start_logits[0] + end_logits[0] < score_null:
            score_null = start_logits[0] + end_logits[0]
            null = _Prelim(feature_index, 0, 0, start_logits[0], end_logits[0])
        prelims.extend(
            _span_candidates(feature_index, feature, start_logits, end_logits, n_best_size, max_answer_length)
        )
    if version_2_with_negative:
        prelims.append(null)
    prelims.sort(key=lambda p: p.start_logit + p.end_logit, reverse=True)
    return features, prelims, score_null, null


def _distinct_entries(example, features, prelims, n_best_size, do_lower_case):
    """The first `n_best_size` candidates with distinct final texts, as `_Entry`s (the null
    answer, start index 0 = [CLS], is the text "")."""
    seen, nbest = set(), []
    for pred in prelims:
        if len(nbest) >= n_best_size:
            break
        if pred.start_index > 0:
            feature = features[pred.feature_index]
            orig_start = feature.token_to_orig_map[pred.start_index]
            orig_end = feature.token_to_orig_map[pred.end_index]
            text = get_final_text(
                _detokenize(feature.tokens[pred.start_index : pred.end_index + 1]),
                " ".join(example.doc_tokens[orig_start : orig_end + 1]),
                do_lower_case,
            )
            if text in seen:
                continue
        else:
            text = ""
        seen.add(text)
        nbest.append(_Entry(text, pred.start_logit, pred.end_logit))
    return nbest


def example_prediction(
    example,
    features_and_results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    version_2_with_negative,
    null_score_diff_threshold,
):
    """One example's answer, its n-best list and (v2.0) its null score difference.

    Args:
      example: has `.doc_tokens`.
      features_and_results: list of `(feature, start_logits, end_logits)`, the example's
        features in order; logits are float sequences of length max_seq_length.
      n_best_size: candidates kept per logit list and entries kept in the n-best list.
      max_answer_length: longest span, in word pieces.
      do_lower_case: as the tokenizer was built (for mapping the answer back to the text).
      version_2_with_negative: SQuAD 2.0: the null answer ("" from [CLS]) competes.
      null_score_diff_threshold: v2.0 predicts "" when null score - best span score exceeds it.

    Returns:
      `(text, nbest, score_diff)`: `nbest` is a list of dicts with keys "text", "probability",
      "start_logit", "end_logit", best first; `score_diff` is None for v1.1.
    """
    features, prelims, score_null, null = _candidates(
        features_and_results, n_best_size, max_answer_length, version_2_with_negative
    )
    nbest = _distinct_entries(example, features, prelims, n_best_size, do_lower_case)
    if version_2_with_negative and all(entry.text for entry in nbest):
        nbest.append(_Entry("", null.start_logit, null.end_logit))
    # The original's nonce entry when nothing valid is left. In v2.0 the original crashes when
    # the n-best list holds only the null answer; the same nonce stands in as the best span there.
    if not nbest or (version_2_with_negative and not any(entry.text for entry in nbest)):
        nbest.append(_Entry(NO_ANSWER, 0.0, 0.0))

    probs = compute_softmax([entry.start_logit + entry.end_logit for entry in nbest])
    nbest_json = [
        {"text": entry.text, "probability": prob, "start_logit": entry.start_logit, "end_logit": entry.end_logit}
        for entry, prob in zip(nbest, probs, strict=True)
    ]
    if not version_2_with_negative:
        return nbest[0].text, nbest_json, None
    best = next(entry for entry in nbest if entry.text)
    score_diff = score_null - best.start_logit - best.end_logit
    text = "" if score_diff > null_score_diff_threshold else best.text
    return text, nbest_json, score_diff


def _write_json(path, value):
    # The original's exact layout: 4-space indent, ASCII escapes, one trailing newline.
    with atomic_write(path) as writer:
        writer.write(json.dumps(value, indent=4) + "\n")


def write_predictions(
    items,
    output_prediction_file,
    output_nbest_file,
    output_null_log_odds_file,
    n_best_size,
    max_answer_length,
    do_lower_case,
    version_2_with_negative,
    null_score_diff_threshold,
):
    """Post-processes every example and writes the original's three files.

    Args:
      items: iterable (a generator is fine) of `(example, features_and_results)` in example
        order; see `example_prediction`.
      output_prediction_file: predictions.json, {qas_id: answer text}.
      output_nbest_file: nbest_predictions.json, {qas_id: n-best list}.
      output_null_log_odds_file: null_odds.json, {qas_id: score_diff}; written for v2.0 only
        (may be None for v1.1).
      Other arguments: as `example_prediction`.

    Returns:
      The predictions, an OrderedDict {qas_id: answer text} in example order.
    """
    if n_best_size < 1:
        raise ValueError(f"n_best_size {n_best_size} must be positive")
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length {max_answer_length} must be positive")
    if version_2_with_negative and not output_null_log_odds_file:
        raise ValueError(f"{shown.version_2_with_negative} needs output_null_log_odds_file")

    predictions = collections.OrderedDict()
    nbest_by_id = collections.OrderedDict()
    score_diffs = collections.OrderedDict()
    for example, features_and_results in items:
        text, nbest, score_diff = example_prediction(
            example,
            features_and_results,
            n_best_size,
            max_answer_length,
            do_lower_case,
            version_2_with_negative,
            null_score_diff_threshold,
        )
        predictions[example.qas_id] = text
        nbest_by_id[example.qas_id] = nbest
        if version_2_with_negative:
            score_diffs[example.qas_id] = score_diff

    _write_json(output_prediction_file, predictions)
    _write_json(output_nbest_file, nbest_by_id)
    if version_2_with_negative:
        _write_json(output_null_log_odds_file, score_diffs)
    return predictions
