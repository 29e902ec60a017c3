import random
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.preprocessing import unicode_tables


def test_tables_are_cached_on_disk_and_reload_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_TF_CACHE_DIR", str(tmp_path))
    built = unicode_tables._build_combining_classes()
    assert unicode_tables._cached("combining_classes", unicode_tables._build_combining_classes) is not None
    (cache,) = list(tmp_path.iterdir())
    assert cache.name.startswith("unicode_tables-") and cache.suffix == ".npz"
    calls = []
    loaded = unicode_tables._cached("combining_classes", lambda: calls.append(1))
    assert not calls  # came from the file
    np.testing.assert_array_equal(loaded, built)
    # Spot checks by hand: combining acute accent 230, a virama 9, a letter 0.
    assert (loaded[0x301], loaded[0x94D], loaded[ord("a")]) == (230, 9, 0)


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("BERT_TF_CACHE_DIR", str(blocked))
    value = unicode_tables._cached("x", lambda: np.arange(3))
    np.testing.assert_array_equal(value, [0, 1, 2])


def _original_row(cp, do_lower_case, strip_marks, space_punctuation):
    """What the original's rules make of one character, written out with tokenization's own
    predicates and unicodedata (the independent statement `clean_map` must equal)."""
    char = chr(cp)
    if cp in (0, 0xFFFD) or tokenization._is_control(char):
        return ""
    if tokenization._is_whitespace(char) or char.isspace():
        return " "
    if do_lower_case:
        char = unicodedata.normalize("NFD", char.lower())
        if strip_marks:
            char = "".join(c for c in char if unicodedata.category(c) != "Mn")

    def spaced(c):
        return tokenization._is_chinese_char(ord(c)) or (space_punctuation and tokenization._is_punctuation(c))

    return "".join(f" {c} " if spaced(c) else c for c in char)


@pytest.mark.parametrize(
    "variant", [(True, True, True), (True, False, True), (False, True, True), (False, True, False)]
)
def test_clean_map_rows_are_the_original_rules_per_character(variant):
    splits, values = unicode_tables.clean_map(*variant)
    assert splits.shape == (unicode_tables.NUM_CODE_POINTS + 1,)
    rng = random.Random(0)
    sample = list(range(0x3400)) + [0x3A3, 0x130, 0x1E9E, 0xAC00, 0xFB01, 0x1D15F, 0xE0041, 0x10FFFF]
    sample += [rng.randrange(0x3400, 0x110000) for _ in range(20000)]
    for cp in sample:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        row = "".join(map(chr, values[splits[cp] : splits[cp + 1]]))
        assert row == _original_row(cp, *variant), f"U+{cp:04X}"


def test_char_class_matches_exactly_its_code_points():
    rng = np.random.default_rng(0)
    mask = np.zeros(unicode_tables.NUM_CODE_POINTS, bool)
    mask[rng.choice(0x30000, 3000, replace=False)] = True
    mask[0x41:0x5B] = True  # a range
    pattern = f"[{unicode_tables.char_class(mask)}]"
    probe = [cp for cp in range(0x30000) if not 0xD800 <= cp <= 0xDFFF and (mask[cp] or cp % 7 == 0)]
    matched = tf.strings.regex_full_match(tf.constant([chr(cp) for cp in probe]), pattern).numpy()
    np.testing.assert_array_equal(matched, mask[probe])
