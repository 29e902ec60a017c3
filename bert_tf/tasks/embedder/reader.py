"""The embedding task's TSV files, each with a header naming its columns (in any order; a row of
another width than the header's, a missing column, an empty cell of a pair, a bad score or an
empty file is a ValueError naming the file and line):

- pairs (train.tsv, and dev.tsv for retrieval): `anchor`, `positive` and optionally `negative`
  (a hard negative for its anchor, which must differ from its positive);
- scored pairs (dev.tsv for an STS-style figure): `sentence1`, `sentence2`, `score` (a number; not
  all equal);
- texts (test.tsv): a `text` column, one text per row to embed (other columns are ignored; a
  blank line is an empty text).

Pairs that repeat a text are checked by the split that reads them (`check_training_repeats`,
`check_retrieval_repeats`): in-batch negatives and retrieval both take a repeated text for a wrong one.
"""

import dataclasses
import functools

import numpy as np

from bert_tf.data.text_files import read_table, tsv_rows
from bert_tf.tokenization import BasicTokenizer

ANCHOR, POSITIVE, NEGATIVE = "anchor", "positive", "negative"
SENTENCE1, SENTENCE2, SCORE = "sentence1", "sentence2", "score"
TEXT = "text"

# The share of train.tsv's pairs that may repeat an earlier pair's positive (docs/sentence_embeddings.md).
# Two pairs with one positive in a batch give each anchor its own positive's twin among its negatives:
# a few in a large file rarely share a batch, as real data has them; more is a file joined to itself
# or a pair copied, which would train on that contradiction in most batches.
MAX_REPEATED_SHARE = 0.1


@dataclasses.dataclass(frozen=True)
class Pairs:
    """(anchor, positive[, negative]) rows: each anchor's right answer is its own positive."""

    anchor: tuple
    positive: tuple
    negative: tuple | None = None  # one hard negative per anchor, when the file has the column
    lines: tuple = ()  # each row's line in its file (the repeat checks name them)

    def __len__(self):
        return len(self.anchor)


@dataclasses.dataclass(frozen=True)
class ScoredPairs:
    """(sentence1, sentence2, score) rows, as STS-B's: a figure is the rank correlation of the
    pairs' cosine similarities with their scores."""

    sentence1: tuple
    sentence2: tuple
    score: np.ndarray  # float32 [n]

    def __len__(self):
        return len(self.sentence1)


def _columns(path):
    """(header {name: index}, [(line, cells)] of the rows below it)."""
    table = read_table(path)
    (header_line, header), rows = table[0], table[1:]
    if not rows:
        raise ValueError(f"{path}: no examples (only a header)")
    return header_line, {name.strip(): i for i, name in enumerate(header)}, rows


def _missing(path, line, columns, wanted):
    missing = [name for name in wanted if name not in columns]
    if missing:
        raise ValueError(
            f"{path}:{line}: no column {', '.join(repr(m) for m in missing)} in the header "
            f"({', '.join(repr(c) for c in columns)}); expected {' '.join(wanted)}"
        )


def _same_text(text, do_lower_case=True):
    """The text as the tokenizer sees it before WordPiece (the original's BasicTokenizer: control
    and format characters dropped, punctuation split off, lower-cased and accents stripped when
    `do_lower_case`): texts with the same key embed alike; an empty key embeds as [CLS] [SEP]."""
    return " ".join(_basic_tokenizer(do_lower_case).tokenize(text))


@functools.cache
def _basic_tokenizer(do_lower_case):
    return BasicTokenizer(do_lower_case=do_lower_case)


def _texts(path, columns, rows, names, do_lower_case=True):
    """{name: the column's cells}, a cell without a token (empty, blank, or only control and format
    characters such as a zero-width space) a ValueError naming its line and column: it would embed
    as [CLS] [SEP] alone, the same vector for every such text."""
    for line, row in rows:
        for name in names:
            if not _same_text(row[columns[name]], do_lower_case):
                raise ValueError(f"{path}:{line}: the {name!r} cell is empty or blank; every pair needs its texts")
    return {name: tuple(row[columns[name]] for _, row in rows) for name in names}


def read_pairs(path, scored_allowed=False, do_lower_case=True):
    """The file's Pairs; with `scored_allowed`, a file whose header has sentence1, sentence2 and
    score gives ScoredPairs instead (a dev file of either layout). Texts are compared (an empty
    cell, a negative equal to its positive) as the run's tokenizer sees them (`do_lower_case`)."""
    line, columns, rows = _columns(path)
    if scored_allowed and SCORE in columns and ANCHOR not in columns:
        _missing(path, line, columns, (SENTENCE1, SENTENCE2, SCORE))
        scores = []
        for row_line, row in rows:
            text = row[columns[SCORE]].strip()
            try:
                scores.append(float(text))
            except ValueError:
                raise ValueError(f"{path}:{row_line}: score {text!r} is not a number") from None
            if not np.isfinite(scores[-1]):
                raise ValueError(f"{path}:{row_line}: score {text!r} is not a finite number")
        scores = np.array(scores, np.float32)
        if np.all(scores == scores[0]):  # a correlation would be 0 / 0, and a search would choose at random
            raise ValueError(f"{path}: the scores are all equal ({scores[0]:g}), so no correlation with the "
                             "similarities is defined; a scored dev file needs at least two different scores")
        texts = _texts(path, columns, rows, (SENTENCE1, SENTENCE2), do_lower_case)
        return ScoredPairs(texts[SENTENCE1], texts[SENTENCE2], scores)
    _missing(path, line, columns, (ANCHOR, POSITIVE))
    names = (ANCHOR, POSITIVE, NEGATIVE) if NEGATIVE in columns else (ANCHOR, POSITIVE)
    texts = _texts(path, columns, rows, names, do_lower_case)
    lines = tuple(row_line for row_line, _ in rows)
    if NEGATIVE in texts:
        for row_line, positive, negative in zip(lines, texts[POSITIVE], texts[NEGATIVE], strict=True):
            if _same_text(positive, do_lower_case) == _same_text(negative, do_lower_case):  # right and wrong at once
                raise ValueError(f"{path}:{row_line}: the negative is the pair's own positive; a hard negative "
                                 "must differ from it")
    return Pairs(texts[ANCHOR], texts[POSITIVE], texts.get(NEGATIVE), lines)


def _repeats(texts, lines, do_lower_case=True):
    """[(line, earlier line)] of each text that an earlier row already has (as the tokenizer sees it)."""
    first, out = {}, []
    for line, text in zip(lines, texts, strict=True):
        key = _same_text(text, do_lower_case)
        if key in first:
            out.append((line, first[key]))
        else:
            first[key] = line
    return out


def check_training_repeats(path, pairs, max_share=MAX_REPEATED_SHARE, do_lower_case=True):
    """The warning (a line naming the count and share; None when there is none) for train.tsv's pairs
    whose positive repeats an earlier pair's (their anchors alike or not): when both share a batch, each
    anchor meets its own positive's twin among its negatives. Above `max_share` of the pairs, a
    ValueError naming the file, the count and the share. (A repeated anchor with another positive
    is not counted: a question with several right answers is how such data is written.)"""
    repeats = _repeats(pairs.positive, pairs.lines, do_lower_case)
    if not repeats:
        return None
    share = len(repeats) / len(pairs)
    what = (f"{path}: {len(repeats)} of {len(pairs)} pairs ({share:.1%}) repeat an earlier pair's positive "
            f"(first: line {repeats[0][0]} repeats line {repeats[0][1]})")
    why = "in a batch with its twin, an anchor's own positive is also among its negatives"
    if share > max_share:
        raise ValueError(f"{what}, more than the {max_share:.0%} allowed: {why}; remove the repeats")
    return f"{what}: {why}"


def check_retrieval_repeats(path, pairs, do_lower_case=True):
    """A ValueError naming the line of a dev pair whose anchor or positive repeats an earlier
    pair's: the figure could not be reached, whatever the model."""
    why = {
        # Each anchor retrieves among all the file's positives, and a tie counts against it.
        POSITIVE: "two equal positives tie, so neither pair's anchor can rank its own first",
        ANCHOR: "two equal anchors embed alike, so at most one of them can rank its own positive first",
    }
    for name, texts in ((ANCHOR, pairs.anchor), (POSITIVE, pairs.positive)):
        repeats = _repeats(texts, pairs.lines, do_lower_case)
        if repeats:
            line, earlier = repeats[0]
            raise ValueError(f"{path}:{line}: the {name} of line {earlier} again: {why[name]}; give each text once")


def read_texts(path):
    """The `text` column of the file, in order, one text per row: a blank line inside the file is
    an empty text (so that row i of the file is always text i); blank lines at its end are none."""
    rows = tsv_rows(path)
    while rows and not rows[-1][1]:
        rows.pop()
    if not rows:
        raise ValueError(f"{path}: no examples (the file is empty)")
    (header_line, header), body = rows[0], rows[1:]
    columns = {name.strip(): i for i, name in enumerate(header)}
    _missing(path, header_line, columns, (TEXT,))
    if not body:
        raise ValueError(f"{path}: no examples (only a header)")
    texts = []
    for line, row in body:
        row = row or [""] * len(header)
        if len(row) != len(header):
            raise ValueError(f"{path}:{line}: {len(row)} tab-separated columns, expected {len(header)} as on line "
                             f"{header_line} (a tab inside a text, or a missing cell?)")
        texts.append(row[columns[TEXT]])
    return tuple(texts)
