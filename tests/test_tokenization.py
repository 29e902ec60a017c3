"""The original's rules, checked against hand-written expected token lists."""

import pytest

from bert_tf import tokenization
from tests.tiny import write_vocab

SMALL_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]


@pytest.fixture
def tokenizer(tmp_path):
    return tokenization.FullTokenizer(write_vocab(tmp_path / "vocab.txt", SMALL_VOCAB))


def test_full_tokenizer(tokenizer):
    tokens = tokenizer.tokenize("UNwant\u00e9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tokenizer.convert_ids_to_tokens([7, 4]) == ["un", "##want"]


def test_basic_lower_case_strips_accents_and_splits_punctuation():
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    assert basic.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]
    assert basic.tokenize("H\u00e9llo") == ["hello"]
    assert basic.tokenize("a^b$c`d") == ["a", "^", "b", "$", "c", "`", "d"]  # ASCII non-P* too


def test_basic_cased_keeps_case_and_accents():
    basic = tokenization.BasicTokenizer(do_lower_case=False)
    assert basic.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["HeLLo", "!", "how", "Are", "yoU", "?"]
    assert basic.tokenize("H\u00e9llo") == ["H\u00e9llo"]


def test_cjk_ideographs_are_spaced_but_not_kana_or_hangul():
    basic = tokenization.BasicTokenizer()
    assert basic.tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]
    assert basic.tokenize("\u30ab\u30bf\u30ab\u30ca") == ["\u30ab\u30bf\u30ab\u30ca"]
    cased = tokenization.BasicTokenizer(do_lower_case=False)
    assert cased.tokenize("\ud55c\uad6d\uc5b4") == ["\ud55c\uad6d\uc5b4"]


def test_lower_case_nfd_quirks_of_the_original():
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    # NFD splits Hangul syllables into conjoining jamo (not Mn, so they stay) ...
    assert basic.tokenize("\ud55c") == ["\u1112\u1161\u11ab"]
    # ... and strips the voiced mark of kana (U+3099 is Mn): GA becomes KA.
    assert basic.tokenize("\u30ac") == ["\u30ab"]


def test_cleaning_drops_controls_and_maps_spaces():
    basic = tokenization.BasicTokenizer()
    # NUL, U+FFFD, a C0 control, soft hyphen (Cf) and zero-width space (Cf) vanish;
    # no-break and ideographic spaces (Zs) separate words.
    assert basic.tokenize("a\x00b\ufffdc\x07d\u00ade\u200bf") == ["abcdef"]
    assert basic.tokenize("x\u00a0y\u3000z") == ["x", "y", "z"]


def test_wordpiece_greedy_longest_match_and_unknowns():
    vocab = {t: i for i, t in enumerate(SMALL_VOCAB)}
    wp = tokenization.WordpieceTokenizer(vocab=vocab)
    assert wp.tokenize("") == []
    assert wp.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert wp.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert wp.tokenize("w" * 201) == ["[UNK]"]


def test_bytes_input_with_invalid_utf8_does_not_crash(tokenizer):
    assert tokenizer.tokenize(b"un\xffwant") == ["un", "##want"]


def test_vocab_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        tokenization.load_vocab(str(tmp_path / "missing.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.txt.*empty"):
        tokenization.load_vocab(str(empty))
    dup = write_vocab(tmp_path / "dup.txt", ["[UNK]", "a", "b", "a"])
    with pytest.raises(ValueError, match=r"dup.txt.*'a' twice \(lines 2 and 4\)"):
        tokenization.load_vocab(dup)


@pytest.mark.parametrize(
    "do_lower_case, checkpoint, bad",
    [
        (True, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt", False),
        (False, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt", True),
        (True, "gs://b/cased_L-24_H-1024_A-16/bert_model.ckpt", True),
        (True, "/m/multi_cased_L-12_H-768_A-12/bert_model.ckpt", True),
        (False, "/m/chinese_L-12_H-768_A-12/bert_model.ckpt", True),
        (False, "/m/uncased_L-4_H-256_A-4/bert_model.ckpt", True),  # the small BERTs
        (True, "/m/wwm_cased_L-24_H-1024_A-16/bert_model.ckpt", True),
        (False, "/m/my_own_model/bert_model.ckpt", False),  # unknown names pass
        (True, "model.keras", False),
        (True, None, False),
    ],
)
def test_validate_case_matches_checkpoint(do_lower_case, checkpoint, bad):
    if bad:
        with pytest.raises(ValueError, match=f"--do_lower_case={do_lower_case}"):
            tokenization.validate_case_matches_checkpoint(do_lower_case, checkpoint)
    else:
        tokenization.validate_case_matches_checkpoint(do_lower_case, checkpoint)


def test_full_tokenizer_vocab_checks(tmp_path):
    with pytest.raises(ValueError, match=r"no_unk.txt.*no '\[UNK\]'"):
        tokenization.FullTokenizer(write_vocab(tmp_path / "no_unk.txt", ["[CLS]", "[SEP]", "a"]))
    with pytest.warns(UserWarning, match=r"no_sep.txt.*no \[SEP\]"):
        tokenization.FullTokenizer(write_vocab(tmp_path / "no_sep.txt", ["[UNK]", "[CLS]", "a"]))


@pytest.mark.parametrize(
    "text, lower, expected",
    [
        # CJK: the listed blocks are spaced out (U+3400 and U+20000 in), others are not
        # (U+2E80 radicals, U+3005 ideographic iteration mark).
        ("x\u3400y\U00020000z", True, ["x", "\u3400", "y", "\U00020000", "z"]),
        ("x\u2e80y\u3005z", True, ["x\u2e80y\u3005z"]),
        # Ideographic space (Zs) separates; a ZWJ (Cf) is dropped, joining its neighbours.
        ("ab\u3000cd e\u200df", True, ["ab", "cd", "ef"]),
        # NFD, not NFKC: ligatures and full-width letters stay, only lower-cased.
        ("\ufb01ne \uff21\uff22", True, ["\ufb01ne", "\uff41\uff42"]),
        # str.lower: sharp s stays, dotted capital I loses its dot, final sigma.
        ("Stra\u00dfe \u0130stanbul", True, ["stra\u00dfe", "istanbul"]),
        ("\u039f\u0394\u039f\u03a3 \u03a3\u0391", True, ["\u03bf\u03b4\u03bf\u03c2", "\u03c3\u03b1"]),
        # Cased: nothing normalised, punctuation still split, full-width "!" is punctuation.
        ("\u00c9t\u00e9\uff01", False, ["\u00c9t\u00e9", "\uff01"]),
    ],
)
def test_basic_rules_by_hand(text, lower, expected):
    assert tokenization.BasicTokenizer(do_lower_case=lower).tokenize(text) == expected


def test_printable_text():
    assert tokenization.printable_text(b"caf\xc3\xa9") == "caf\u00e9"
    assert tokenization.printable_text("x") == "x"
