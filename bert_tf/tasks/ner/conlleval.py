"""Entity-level precision, recall and F1 with the rules of CoNLL's `conlleval` script.

The CoNLL-2000..2003 shared tasks score chunks (named entities): a predicted entity counts only
when its type and both of its boundaries equal a gold entity's. Where an entity starts and ends
is read from the tags with conlleval's rules, so IOB1 (`I-` opens an entity unless it continues
one of the same type; `B-` only separates two adjacent entities of one type), IOB2/BIO (every
entity opens with `B-`) and IOBES (`E-` closes, `S-` is a one-word entity) are scored alike, and
so are the ill-formed sequences a model predicts:

- an entity starts at a `B-` or `S-` tag, at an `I-` after `O`, `E-` or `S-`, at an `E-` after
  `O`, `E-` or `S-`, and at any tag other than `O` whose type differs from the previous tag's
  (`I-PER` after `O` therefore opens a PER entity: conlleval's reading of IOB1);
- an entity ends before `O`, before a `B-` or `S-`, after an `E-` or `S-`, and wherever the
  type changes.

Sentences are scored separately (an entity never crosses a sentence boundary). Precision,
recall and F1 are fractions here (conlleval prints percentages, `Report.table` too); a ratio
0/0 is 0, as conlleval's.
"""

import dataclasses

OUTSIDE = "O"
PREFIXES = ("B", "I", "E", "S")


def split_tag(tag):
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', ''). The type is all that follows the first '-'."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def is_valid_tag(tag):
    """Whether `tag` is `O` or one of B-/I-/E-/S- followed by a non-empty type."""
    prefix, kind = split_tag(tag)
    return tag == OUTSIDE or (prefix in PREFIXES and bool(kind))


def _starts(previous, current):
    (p, p_type), (c, c_type) = previous, current
    if c == OUTSIDE:
        return False
    return c in ("B", "S") or p in (OUTSIDE, "E", "S") or p_type != c_type


def _ends(previous, current):
    (p, p_type), (c, c_type) = previous, current
    if p == OUTSIDE:
        return False
    return p in ("E", "S") or c in (OUTSIDE, "B", "S") or p_type != c_type


def entities(tags):
    """The entities of one sentence's tags: a list of `(type, start, end)`, `end` exclusive."""
    found, start = [], None
    previous = (OUTSIDE, "")
    for i, tag in enumerate([*tags, OUTSIDE]):  # a final O closes what is open
        current = split_tag(tag)
        if start is not None and _ends(previous, current):
            found.append((previous[1], start, i))
            start = None
        if _starts(previous, current):
            start = i
        previous = current
    return found


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


@dataclasses.dataclass
class Counts:
    """Entity counts of one type (or of all): conlleval's found-correct, found-guessed, correct."""

    gold: int = 0
    predicted: int = 0
    correct: int = 0

    @property
    def precision(self):
        return _ratio(self.correct, self.predicted)

    @property
    def recall(self):
        return _ratio(self.correct, self.gold)

    @property
    def f1(self):
        p, r = self.precision, self.recall
        return _ratio(2 * p * r, p + r)


@dataclasses.dataclass
class Report:
    """What conlleval prints: the overall counts, the counts per type, and tag accuracy."""

    overall: Counts
    by_type: dict  # type -> Counts, sorted by type
    tokens: int
    correct_tags: int

    @property
    def accuracy(self):
        """The fraction of words whose predicted tag equals the gold tag (conlleval's accuracy)."""
        return _ratio(self.correct_tags, self.tokens)

    def as_dict(self, prefix="eval_"):
        """Flat figures for eval_results.txt: `{prefix}precision`, `recall`, `f1`, `accuracy`,
        the entity counts, and per type `{prefix}{type}_precision` / `_recall` / `_f1` /
        `_gold` (how many gold entities of the type there are)."""
        out = {
            f"{prefix}precision": self.overall.precision,
            f"{prefix}recall": self.overall.recall,
            f"{prefix}f1": self.overall.f1,
            f"{prefix}accuracy": self.accuracy,
            f"{prefix}gold_entities": self.overall.gold,
            f"{prefix}predicted_entities": self.overall.predicted,
            f"{prefix}correct_entities": self.overall.correct,
        }
        for kind, counts in self.by_type.items():
            out.update(
                {
                    f"{prefix}{kind}_precision": counts.precision,
                    f"{prefix}{kind}_recall": counts.recall,
                    f"{prefix}{kind}_f1": counts.f1,
                    f"{prefix}{kind}_gold": counts.gold,
                }
            )
        return out

    def table(self):
        """conlleval's report: a summary line, the overall figures, then one line per type
        (percentages, two decimals; the last column counts the predicted entities)."""
        o = self.overall
        lines = [
            f"processed {self.tokens} tokens with {o.gold} phrases; found: {o.predicted} phrases; "
            f"correct: {o.correct}.",
            f"accuracy: {100 * self.accuracy:6.2f}%; precision: {100 * o.precision:6.2f}%; "
            f"recall: {100 * o.recall:6.2f}%; FB1: {100 * o.f1:6.2f}",
        ]
        for kind, c in self.by_type.items():
            lines.append(
                f"{kind:>17}: precision: {100 * c.precision:6.2f}%; recall: {100 * c.recall:6.2f}%; "
                f"FB1: {100 * c.f1:6.2f}  {c.predicted}"
            )
        return "\n".join(lines) + "\n"


def evaluate(gold, predicted):
    """The report for sentences of gold tags and the predicted tags of the same words.

    gold, predicted: sequences of sentences, each a sequence of tag strings; sentence i of both
    must have the same length.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted ones")
    by_type, tokens, correct_tags = {}, 0, 0
    for i, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted ones")
        tokens += len(g)
        correct_tags += sum(a == b for a, b in zip(g, p, strict=True))
        g_entities, p_entities = set(entities(g)), set(entities(p))
        for field, found in (("gold", g_entities), ("predicted", p_entities), ("correct", g_entities & p_entities)):
            for kind, _, _ in found:
                counts = by_type.setdefault(kind, Counts())
                setattr(counts, field, getattr(counts, field) + 1)
    by_type = dict(sorted(by_type.items()))
    overall = Counts(*(sum(getattr(c, f) for c in by_type.values()) for f in ("gold", "predicted", "correct")))
    return Report(overall, by_type, tokens, correct_tags)
