"""BertBasicTokenizer against the original BasicTokenizer (bert_tf.tokenization, itself checked
against hand-written token lists), road by road: each test also shows its lines took the road
it is about, so a wrong road cannot hide behind a right one."""

import random
import unicodedata

import pytest
import tensorflow as tf

from bert_tf.preprocessing import BertBasicTokenizer
from bert_tf.preprocessing import bert_basic_tokenizer as module
from bert_tf.tokenization import BasicTokenizer

SPECIAL = ["[CLS]", "[SEP]", "[MASK]"]


def _words(tokens):
    return [[w.decode("utf-8") for w in row] for row in tokens.to_list()]


def _mismatches(expected, got, lines):
    bad = [i for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
    return [f"{lines[i]!r}: expected {expected[i]}, got {got[i]}" for i in bad[:5]], len(bad)


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_basic_tokenizer_layer_equals_basic_tokenizer(corpus_lines, do_lower_case):
    lines = corpus_lines[-1500:]
    expected = [BasicTokenizer(do_lower_case=do_lower_case).tokenize(line) for line in lines]
    tokens, lengths = BertBasicTokenizer(do_lower_case=do_lower_case).tokens_and_lengths(tf.constant(lines))
    shown, count = _mismatches(expected, _words(tokens), lines)
    assert count == 0, "\n".join(shown)
    assert lengths.to_list() == [[len(w) for w in row] for row in expected]


def _ascii_lines(count, seed=0, controls=True):
    """Random lines over all 128 ASCII code points (or the printable ones and \\t \\n \\r),
    with enough letters and spaces to make words."""
    rng = random.Random(seed)
    pool = [chr(c) for c in range(128) if controls or c in (9, 10, 13) or 32 <= c < 127]
    pool += list("abcXYZ09 ") * 8
    return ["".join(rng.choice(pool) for _ in range(rng.randint(0, 80))) for _ in range(count)]


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_each_line_takes_its_road_with_the_same_words(spy, do_lower_case):
    """Printable ASCII lines go down the byte road (no code points decoded); the others, control
    bytes included, over code points; in one batch, back in their order."""
    printable = _ascii_lines(2000, controls=False) + ["", "   ", "x\ry", "Don't-stop,now!", "a\tb\n"]
    byte_road = set("\t\n\r" + "".join(map(chr, range(32, 127))))
    other = [line for line in _ascii_lines(300, seed=1) if not set(line) <= byte_road]
    other += ["\x00\x7f", "a\x0bb", "\x1cend", "Caf\u00e9 \u00c9T\u00c9, na\u00efve!", "\u4e2d\u6587ok\u3002"]
    other += ["\u039f\u0394\u039f\u03a3.", "a\u00a0b\u2028c", "x\u200by"]
    lines = printable[:900] + other + printable[900:]
    expected = [BasicTokenizer(do_lower_case=do_lower_case).tokenize(line) for line in lines]
    decoded = spy(module, "_decode")
    tokens, lengths = BertBasicTokenizer(do_lower_case=do_lower_case).tokens_and_lengths(tf.constant(lines))
    shown, count = _mismatches(expected, _words(tokens), lines)
    assert count == 0, "\n".join(shown)
    assert lengths.to_list() == [[len(w) for w in row] for row in expected]
    ((decoded_lines,),) = decoded
    decoded_lines = [line.decode("utf-8") for line in decoded_lines.numpy()]
    if do_lower_case:  # decoded with a space at both ends
        decoded_lines = [line[1:-1] for line in decoded_lines]
    assert decoded_lines == other


def test_mixed_batches_keep_line_order_in_eager_and_graph():
    ascii_lines = _ascii_lines(40, seed=1)
    lines = (
        ascii_lines[:15]
        + ["Caf\u00e9 \u00c9T\u00c9, na\u00efve!", "\u4e2d\u6587 ok"]
        + ascii_lines[15:]
        + ["\u03a3\u039f\u03a3"]
    )
    expected = [BasicTokenizer().tokenize(line) for line in lines]
    layer = BertBasicTokenizer()
    graph = tf.function(layer.tokens_and_lengths, autograph=False)
    for tokens, _ in (layer.tokens_and_lengths(tf.constant(lines)), graph(tf.constant(lines))):
        assert _words(tokens) == expected


def _per_character(line):
    """Lower-casing, NFD and Mn removal character by character: right unless NFD reorders."""
    def strip(char):
        return "".join(m for m in unicodedata.normalize("NFD", char.lower()) if unicodedata.category(m) != "Mn")

    return BasicTokenizer(do_lower_case=False).tokenize("".join(strip(c) for c in line))


def test_lines_nfd_reorders_take_the_ordering_road(spy):
    # A musical stem (Mc, class 216) after an augmentation dot (Mc, 226): NFD swaps them and
    # both stay (only Mn are stripped), so character by character the answer would be wrong.
    ordered = ["a\U0001d16d\U0001d165", "\U0001d15f\U0001d16d\U0001d165 x", "b \U0001d16d\u0300\U0001d165\u0316!"]
    assert all(BasicTokenizer().tokenize(line) != _per_character(line) for line in ordered)
    plain = ["\u00c9t\u00e9 d\u00e9j\u00e0", "n\u0303o \u1e9e"]
    invalid = "\u00c9".encode() + b"\xff" + "\U0001d16d\U0001d165".encode()  # with invalid UTF-8
    lines = [line.encode() for line in plain + ordered] + [invalid]
    expected = [BasicTokenizer().tokenize(line) for line in lines]
    layer = BertBasicTokenizer()
    reordered = spy(layer, "_order_strip")
    assert _words(layer(tf.constant(lines))) == expected
    ((_, splits),) = reordered
    assert splits.shape == (len(ordered) + 2,)  # the ordered lines and the invalid one
    assert _words(tf.function(BertBasicTokenizer().call)(tf.constant(lines))) == expected


def test_final_sigma_on_whole_lines_is_the_word_rule():
    """str.lower's Σ -> ς looks at the word's neighbouring characters; the layer looks along the
    line, where whitespace, CJK ideographs, dropped characters and line ends must act as the
    word's edges do."""
    lines = [
        "\u0391",  # a cased letter ends the line before a line starting with Σ
        "\u03a3 \u0391", "\u0391\u03a3", "\u0391\u03a3.", "\u0391\u03a3'\u0391", "\u0391\u03a3 \u0391",
        "\u0391\u200b\u03a3", "\u0391\x00\u03a3", "\u0391\u03a3\x00\u0391", "\u4e2d\u0391\u03a3\u4e2d\u0391",
        "\u0391\u03a3\u4e2d", "\u03a3\u0391\u03a3 \u03a3\u03a3", "\u0391\u0345\u03a3", "\u0391'\u03a3\u00ad",
    ]
    expected = [BasicTokenizer().tokenize(line) for line in lines]
    flat = "".join(w for row in expected for w in row)
    assert "\u03c2" in flat and "\u03c3" in flat  # both outcomes occur
    assert _words(BertBasicTokenizer()(tf.constant(lines))) == expected


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_never_split_words_on_random_text(corpus_lines, do_lower_case):
    """Special words wherever the original finds them: between whitespace, next to CJK, with
    dropped characters around; not when punctuation or letters touch them."""
    rng = random.Random(3)
    joins = [" ", " ", "\u4e2d", "\u200b ", " \u00a0", "!", "x"]
    lines = []
    for line in corpus_lines[-800:]:
        words = line.split(" ")
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(joins) + rng.choice(SPECIAL) + rng.choice(joins))
        lines.append(" ".join(words))
    expected = [BasicTokenizer(do_lower_case=do_lower_case, never_split=SPECIAL).tokenize(line) for line in lines]
    assert sum(row.count("[MASK]") for row in expected) > 50
    layer = BertBasicTokenizer(do_lower_case=do_lower_case, never_split=SPECIAL)
    tokens, lengths = layer.tokens_and_lengths(tf.constant(lines))
    shown, count = _mismatches(expected, _words(tokens), lines)
    assert count == 0, "\n".join(shown)
    assert lengths.to_list() == [[len(w) for w in row] for row in expected]
