"""The embedding task's TSV files, each with a header naming its columns (in any order; a row of
another width than the header's, a missing column, a bad score or an empty file is a ValueError
naming the file and line):

- pairs (train.tsv, and dev.tsv for retrieval): `anchor`, `positive` and optionally `negative`
  (a hard negative for its anchor);
- scored pairs (dev.tsv for an STS-style figure): `sentence1`, `sentence2`, `score` (a number);
- texts (test.tsv): a `text` column, one text per row to embed (other columns are ignored; a
  blank line is an empty text).
"""

import dataclasses

import numpy as np

from bert_tf.data.text_files import read_table, tsv_rows

ANCHOR, POSITIVE, NEGATIVE = "anchor", "positive", "negative"
SENTENCE1, SENTENCE2, SCORE = "sentence1", "sentence2", "score"
TEXT = "text"


@dataclasses.dataclass(frozen=True)
class Pairs:
    """(anchor, positive[, negative]) rows: each anchor's right answer is its own positive."""

    anchor: tuple
    positive: tuple
    negative: tuple | None = None  # one hard negative per anchor, when the file has the column

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


def read_pairs(path, scored_allowed=False):
    """The file's Pairs; with `scored_allowed`, a file whose header has sentence1, sentence2 and
    score gives ScoredPairs instead (a dev file of either layout)."""
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
        cells = lambda name: tuple(row[columns[name]] for _, row in rows)  # noqa: E731
        return ScoredPairs(cells(SENTENCE1), cells(SENTENCE2), np.array(scores, np.float32))
    _missing(path, line, columns, (ANCHOR, POSITIVE))
    cells = lambda name: tuple(row[columns[name]] for _, row in rows)  # noqa: E731
    return Pairs(cells(ANCHOR), cells(POSITIVE), cells(NEGATIVE) if NEGATIVE in columns else None)


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
