"""SWAG (Zellers et al., 2018): the CSV files of its release, read as multiple-choice examples.

train.csv, val.csv and test.csv start with a header naming their columns: an unnamed row index,
`video-id`, `fold-ind`, `startphrase`, `sent1`, `sent2`, `gold-source`, `ending0` ... `ending3`
and `label` (the right ending's index; test.csv has none). `sent1` is the context sentence,
`sent2` the start of the next one, which each ending completes. The paper (§4.4) packs, for each
ending, `[CLS] sent1 [SEP] sent2 ending [SEP]`. Columns are found by name, so their order and
any extra columns do not matter; a missing column, a row of another width, a bad label or an
empty file is an error naming the file and line.
"""

import csv
import dataclasses

import numpy as np

from bert_tf.data.text_files import read_text_lines

SPLIT_FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}
NUM_CHOICES = 4
ENDINGS = tuple(f"ending{i}" for i in range(NUM_CHOICES))
CONTEXT, START, LABEL, INDEX = "sent1", "sent2", "label", ""  # INDEX: the unnamed first column


@dataclasses.dataclass
class SwagExample:
    guid: str  # e.g. "train-12" (the row index)
    context: str  # sent1
    start: str  # sent2, the start of the sentence the endings complete
    endings: list
    label: int | None = None  # the right ending's index; None in test.csv
    index: str | None = None  # the row index column, written with the predictions


def _rows(path):
    """(line number, cells) of every non-blank CSV row (quoted fields may span lines)."""
    lines = read_text_lines(path)
    reader = csv.reader(line + "\n" for _, line in lines)
    rows = []
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                rows.append((reader.line_num, row))
    except csv.Error as e:
        raise ValueError(f"{path}:{reader.line_num}: {e}") from e
    return rows


def read_swag(path, split="train", labelled=True):
    """The examples of one SWAG CSV file; `labelled`: the file must have a `label` column (it is
    read when present either way)."""
    rows = _rows(path)
    if not rows:
        raise ValueError(f"{path}: no examples (the file is empty)")
    header_line, header = rows[0]
    columns = {name.strip(): i for i, name in enumerate(header)}
    required = [CONTEXT, START, *ENDINGS] + ([LABEL] if labelled else [])
    missing = [name for name in required if name not in columns]
    if missing:
        raise ValueError(
            f"{path}:{header_line}: no column {', '.join(repr(m) for m in missing)} in the header "
            f"({', '.join(repr(h) for h in header)}); SWAG's files name sent1, sent2, ending0-3 and label"
        )
    examples = []
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise ValueError(
                f"{path}:{line}: {len(row)} columns, but the header (line {header_line}) has {len(header)}"
            )
        label = None
        if LABEL in columns:
            text = row[columns[LABEL]].strip()
            if not (text.isdigit() and int(text) < NUM_CHOICES):
                raise ValueError(f"{path}:{line}: label {text!r} is not an ending's index (0 to {NUM_CHOICES - 1})")
            label = int(text)
        index = row[columns[INDEX]] if INDEX in columns else None
        examples.append(
            SwagExample(
                guid=f"{split}-{index if index is not None else len(examples)}",
                context=row[columns[CONTEXT]],
                start=row[columns[START]],
                endings=[row[columns[e]] for e in ENDINGS],
                label=label,
                index=index,
            )
        )
    if not examples:
        raise ValueError(f"{path}: no examples (only a header)")
    return examples


def encode_examples(examples):
    """SwagExamples -> the arrays `SwagTask.dataset` reads: `context` (sent1),
    `choices` (`sent2 ending_i`, object `[n, 4]`), `label` (int32, 0 when unlabelled)."""
    return {
        "context": np.array([e.context for e in examples], dtype=object),
        "choices": np.array([[f"{e.start} {ending}".strip() for ending in e.endings] for e in examples], dtype=object),
        "label": np.array([e.label or 0 for e in examples], dtype=np.int32),
    }
