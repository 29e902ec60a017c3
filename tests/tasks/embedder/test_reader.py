"""The embedding task's readers on tiny files made here: cells a pair cannot do without, scores
that give no correlation, and repeated texts, which in-batch negatives and retrieval both take for
wrong answers."""

import os
import re

import numpy as np
import pytest

from bert_tf.tasks.embedder import reader
from bert_tf.tasks.embedder import run as embedder_run
from tests.run_scripts.conftest import REPO


def _write(path, header, rows):
    path.write_text("\n".join(["\t".join(header)] + ["\t".join(row) for row in rows]) + "\n", encoding="utf-8")
    return path


def test_an_empty_cell_of_a_pair_names_its_file_line_and_column(tmp_path):
    full = [("a cat", "a kitten", "a car"), ("the sea", "the ocean", "a pea")]
    cases = [(0, 2, "anchor", ""), (1, 3, "positive", "  "), (0, 2, "negative", "")]  # (row, its line, ...)
    for row, line, column, cell in cases:
        rows = [list(r) for r in full]
        rows[row][["anchor", "positive", "negative"].index(column)] = cell
        path = _write(tmp_path / f"{column}.tsv", ("anchor", "positive", "negative"), rows)
        with pytest.raises(ValueError) as e:
            reader.read_pairs(str(path))
        assert str(e.value) == f"{path}:{line}: the {column!r} cell is empty or blank; every pair needs its texts"
    scored = _write(tmp_path / "sts.tsv", ("sentence1", "sentence2", "score"), [("a", "b", "1"), ("c", "", "2")])
    with pytest.raises(ValueError, match=f"^{re.escape(str(scored))}:3: the 'sentence2' cell is empty or blank"):
        reader.read_pairs(str(scored), scored_allowed=True)
    own = _write(tmp_path / "own.tsv", ("anchor", "positive", "negative"),
                 [full[0], ("the sea", "the  ocean", "the ocean")])  # spaces aside, the same text
    with pytest.raises(ValueError, match=f"^{re.escape(str(own))}:3: the negative is the pair's own positive"):
        reader.read_pairs(str(own))
    # test.tsv keeps its empty texts: row i of the file stays text i.
    texts = tmp_path / "test.tsv"
    texts.write_text("text\na\n\nb\n", encoding="utf-8")
    assert reader.read_texts(str(texts)) == ("a", "", "b")


def test_scores_all_equal_give_no_correlation_and_are_refused(tmp_path):
    for name, scores in (("same", ["2", "2.0", "2e0"]), ("one", ["3.5"])):
        path = _write(tmp_path / f"{name}.tsv", ("sentence1", "sentence2", "score"),
                      [(f"a{i}", f"b{i}", s) for i, s in enumerate(scores)])
        with pytest.raises(ValueError) as e:
            reader.read_pairs(str(path), scored_allowed=True)
        value = float(scores[0])
        assert str(e.value) == (f"{path}: the scores are all equal ({value:g}), so no correlation with the "
                                "similarities is defined; a scored dev file needs at least two different scores")
    two = _write(tmp_path / "two.tsv", ("sentence1", "sentence2", "score"), [("a", "b", "2"), ("c", "d", "2.5")])
    np.testing.assert_array_equal(reader.read_pairs(str(two), scored_allowed=True).score, [2.0, 2.5])


def _repeated_positives(positives):
    """The rule, stated again: rows whose positive (spaces aside) an earlier row already has."""
    seen, count = set(), 0
    for text in positives:
        key = tuple(text.split())
        count += key in seen
        seen.add(key)
    return count


def test_train_pairs_repeating_a_positive_warn_and_past_a_tenth_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    for repeats in (0, 3, 4, 5, 63):
        n = 40 if repeats < 63 else 64
        positives = [f"positive {i}" for i in range(n - repeats)]
        # Repeats of earlier positives (one with other spaces), some under another anchor.
        positives += [" " + positives[int(rng.integers(len(positives)))].replace(" ", "  ") for _ in range(repeats)]
        anchors = [f"anchor {i % (n - 2)}" for i in range(n)]  # two repeated anchors: not counted
        path = _write(tmp_path / f"train{repeats}.tsv", ("anchor", "positive"), zip(anchors, positives, strict=True))
        pairs = reader.read_pairs(str(path))
        count = _repeated_positives(positives)
        assert count == repeats
        share = count / n
        if share > 0.1:
            with pytest.raises(ValueError) as e:
                reader.check_training_repeats(str(path), pairs)
            message = str(e.value)
            assert message.startswith(f"{path}: {count} of {n} pairs ({share:.1%}) repeat an earlier pair's positive")
            assert "more than the 10% allowed" in message
        elif count:
            warning = reader.check_training_repeats(str(path), pairs)
            assert warning.startswith(f"{path}: {count} of {n} pairs ({share:.1%}) repeat an earlier pair's positive")
        else:
            assert reader.check_training_repeats(str(path), pairs) is None


def test_a_retrieval_dev_pair_repeating_an_anchor_or_positive_is_refused_naming_its_line(tmp_path):
    rows = [("a cat", "a kitten"), ("the sea", "the ocean"), ("a dog", "a puppy")]
    for column, line, earlier in (("positive", 4, 2), ("anchor", 3, 2)):
        changed = [list(r) for r in rows]
        index = ("anchor", "positive").index(column)
        changed[line - 2][index] = rows[earlier - 2][index]
        data = tmp_path / column
        data.mkdir()
        path = _write(data / "dev.tsv", ("anchor", "positive"), changed)
        with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:{line}: the {column} of line {earlier} again: "):
            embedder_run.read_split(str(data), "dev")


def test_read_split_logs_the_repeats_of_train_and_the_shipped_pairs_pass_every_check(tmp_path, caplog):
    data = tmp_path / "pairs"
    data.mkdir()
    _write(data / "train.tsv", ("anchor", "positive"), [(f"a{i}", f"p{min(i, 18)}") for i in range(20)])
    with caplog.at_level("WARNING"):
        assert len(embedder_run.read_split(str(data), "train")) == 20
    assert [r.getMessage() for r in caplog.records] == [
        f"{data / 'train.tsv'}: 1 of 20 pairs (5.0%) repeat an earlier pair's positive (first: line 21 repeats "
        "line 20): in a batch with its twin, an anchor's own positive is also among its negatives"]
    caplog.clear()
    shipped = os.path.join(REPO, "data", "pairs")
    with caplog.at_level("WARNING"):
        sizes = [len(embedder_run.read_split(shipped, split)) for split in ("train", "dev", "test")]
    assert sizes == [320, 60, 6] and not caplog.records


def test_texts_are_compared_as_the_runs_tokenizer_sees_them(tmp_path):
    """Case (when the run lower-cases), accents, punctuation spacing and control or format characters
    do not make two texts differ for the model, nor a cell of them alone a text."""
    # A cell of a zero-width space (a format character) or a bell (a control character) has no token.
    for name, cell in (("zero_width", "\u200b"), ("bell", "\x07 ")):
        path = _write(tmp_path / f"{name}.tsv", ("anchor", "positive"), [("a cat", cell), ("the sea", "the ocean")])
        with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:2: the 'positive' cell is empty or blank"):
            reader.read_pairs(str(path))
    twins = [("Green.", "green ."), ("Café au lait", "cafe au lait"), ("the\u200bsea", "thesea")]
    rows = [(f"q{i}", text) for i, pair in enumerate(twins) for text in pair]
    path = _write(tmp_path / "twins.tsv", ("anchor", "positive"), rows)
    pairs = reader.read_pairs(str(path))
    # Lower-cased (the original's default): each second text repeats the first, 3 of 6 pairs.
    with pytest.raises(ValueError, match=r": 3 of 6 pairs \(50.0%\) repeat an earlier pair's positive \(first: line 3 "
                                         r"repeats line 2\)"):
        reader.check_training_repeats(str(path), pairs)
    # Cased: "Green." and "green ." differ, as do "Café" and "cafe"; the zero-width space still does not count.
    with pytest.raises(ValueError, match=r": 1 of 6 pairs \(16.7%\) repeat an earlier pair's positive \(first: line 7 "
                                         r"repeats line 6\)"):
        reader.check_training_repeats(str(path), pairs, do_lower_case=False)
