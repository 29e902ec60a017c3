"""Tiny SQuAD files for the tests of a run's steps: single-piece words, so that a window's tokens
are the context's words and its count follows from the word counts alone."""

import json

from bert_tf.tasks.squad import run as squad_run

# Single-piece words: a window's tokens are the context's words.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "on", "mat", "where", "is", "?"]
SEQ, STRIDE, QUERY = 16, 3, 6
# Paragraph word counts: one window (5 words), several (11, 14 words; a window holds
# SEQ - 5 - 3 = 8 words beside [CLS] where is the cat ? [SEP] ... [SEP]).
LENGTHS = (5, 11, 14)


def _context(n, cat_at):
    words = [("dog", "sat", "on", "the", "mat")[i % 5] for i in range(n)]
    words[cat_at] = "cat"
    return " ".join(words)


def write_squad(path, answers=True, impossible=False, lengths=LENGTHS):
    """A SQuAD file: one paragraph per entry of `lengths`, two questions each (the cat's place)."""
    paragraphs = []
    for p, n in enumerate(lengths):
        context = _context(n, cat_at=n - 2)
        start = len(" ".join(context.split()[: n - 2])) + 1
        qas = []
        for q in range(2):
            qa = {"id": f"q{p}-{q}", "question": "where is the cat ?"}
            if answers:
                qa["answers"] = [{"text": "cat", "answer_start": start}]
            if impossible and q == 1:
                qa.update(answers=[], is_impossible=True)
            qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    data = [{"title": "t", "paragraphs": paragraphs}]
    path.write_text(json.dumps({"version": "v2.0" if impossible else "1.1", "data": data}), encoding="utf-8")
    return str(path)


def window_count(n, seq=SEQ, stride=STRIDE, query_tokens=5):
    """The original's doc spans of an n-word context: how many windows."""
    room, start, count = seq - query_tokens - 3, 0, 0
    while start < n:
        length = min(n - start, room)
        count += 1
        if start + length == n:
            break
        start += min(length, stride)
    return count


def run_record(**changes):
    """The run record of SEQ, STRIDE, QUERY, SQuAD v1.1, lower case, with `changes`."""
    values = dict(version_2_with_negative=False, do_lower_case=True, max_seq_length=SEQ, doc_stride=STRIDE,
                  max_query_length=QUERY)
    return squad_run.squad_record(**{**values, **changes})
