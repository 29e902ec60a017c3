"""The in-graph tokenizer against FullTokenizer (itself checked against hand-written token
lists in tests/test_tokenization.py) on real prose and on random text from every Unicode area
the rules treat specially."""

import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.preprocessing import BertBasicTokenizer, BertPackInputs, BertTokenizer
from bert_tf.tokenization import BasicTokenizer, FullTokenizer
from tests.tiny import write_vocab

DATA_VOCAB = os.path.join(os.path.dirname(__file__), "..", "..", "data", "vocab.txt")


def _mismatches(expected, got, lines):
    bad = [i for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
    return [f"{lines[i]!r}: expected {expected[i]}, got {got[i]}" for i in bad[:5]], len(bad)


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_ids_equal_full_tokenizer_on_every_line(corpus_lines, learned_vocabs, do_lower_case):
    vocab_file = learned_vocabs[do_lower_case]
    python = FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    expected = [python.convert_tokens_to_ids(python.tokenize(line)) for line in corpus_lines]
    got = BertTokenizer(vocab_file, do_lower_case=do_lower_case)(tf.constant(corpus_lines)).to_list()
    shown, count = _mismatches(expected, got, corpus_lines)
    assert count == 0, f"{count} of {len(corpus_lines)} lines differ, e.g.:\n" + "\n".join(shown)
    # The comparison means something: real pieces, unknowns and empty lines all occur.
    flat = [i for ids in expected for i in ids]
    assert len(set(flat)) > 2000 and flat.count(python.vocab["[UNK]"]) > 100
    assert sum(1 for ids in expected if not ids) > 0


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_basic_tokenizer_layer_equals_basic_tokenizer(corpus_lines, do_lower_case):
    lines = corpus_lines[-1500:]
    expected = [BasicTokenizer(do_lower_case=do_lower_case).tokenize(line) for line in lines]
    words = BertBasicTokenizer(do_lower_case=do_lower_case)(tf.constant(lines)).to_list()
    got = [[w.decode("utf-8") for w in row] for row in words]
    shown, count = _mismatches(expected, got, lines)
    assert count == 0, "\n".join(shown)


def _ascii_lines(count, seed=0):
    """Random lines over all 128 ASCII code points (controls, \\t\\n\\r\\v\\f, punctuation), with
    enough letters and spaces to make words."""
    rng = random.Random(seed)
    pool = [chr(c) for c in range(128)] + list("abcXYZ09 ") * 8
    return ["".join(rng.choice(pool) for _ in range(rng.randint(0, 80))) for _ in range(count)]


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_ascii_lines_take_the_byte_road_with_the_same_words(monkeypatch, do_lower_case):
    lines = _ascii_lines(3000) + ["", "   ", "\x00\x7f", "a\x0bb", "x\ry", "\x1cend", "Don't-stop,now!"]
    expected = [BasicTokenizer(do_lower_case=do_lower_case).tokenize(line) for line in lines]
    layer = BertBasicTokenizer(do_lower_case=do_lower_case)

    def refuse(text):
        raise AssertionError("an all-ASCII batch went down the code point road")

    monkeypatch.setattr(layer, "_general", refuse)
    tokens, lengths = layer.tokens_and_lengths(tf.constant(lines))
    got = [[w.decode("ascii") for w in row] for row in tokens.to_list()]
    shown, count = _mismatches(expected, got, lines)
    assert count == 0, "\n".join(shown)
    assert lengths.to_list() == [[len(w) for w in row] for row in expected]


def test_mixed_batches_keep_line_order_in_eager_and_graph():
    ascii_lines = _ascii_lines(40, seed=1)
    lines = ascii_lines[:15] + ["Caf\u00e9 \u00c9T\u00c9, na\u00efve!", "\u4e2d\u6587 ok"] + ascii_lines[15:] + ["\u03a3\u039f\u03a3"]
    expected = [BasicTokenizer().tokenize(line) for line in lines]
    layer = BertBasicTokenizer()
    graph = tf.function(layer.tokens_and_lengths, autograph=False)
    for tokens, _ in (layer.tokens_and_lengths(tf.constant(lines)), graph(tf.constant(lines))):
        assert [[w.decode("utf-8") for w in row] for row in tokens.to_list()] == expected


def test_never_split_keeps_special_tokens_whole(tmp_path):
    vocab = write_vocab(tmp_path / "v.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "[", "]", "mask", "!", "x", "cls"])
    text = "[CLS] hello [SEP] [MASK]! [CLS]x [mask]"
    special = ["[CLS]", "[SEP]", "[MASK]"]
    python = FullTokenizer(vocab, never_split=special)
    # Whole words only: "[MASK]!" and "[CLS]x" are split as usual; "[mask]" is not special.
    expected = ["[CLS]", "hello", "[SEP]", "[", "mask", "]", "!", "[", "cls", "]", "x", "[", "mask", "]"]
    assert python.tokenize(text) == expected
    assert FullTokenizer(vocab).tokenize("[CLS]") == ["[", "cls", "]"]  # off by default
    layer = BertTokenizer(vocab, never_split=special)
    assert layer(tf.constant([text])).to_list() == [python.convert_tokens_to_ids(expected)]
    cased = BertTokenizer(vocab, do_lower_case=False, never_split=special)
    assert cased(tf.constant(["[MASK] x"])).to_list() == [[4, 10]]


def test_invalid_utf8_is_replaced_like_full_tokenizer():
    python = FullTokenizer(DATA_VOCAB)
    texts = [b"caf\xc3", b"\xff\xfethe town", b"the\xe2\x82 town", b"\xed\xa0\x80river", b"a\xc0\xafb", b"\xf4\x90\x80\x80x"]
    expected = [python.convert_tokens_to_ids(python.tokenize(t)) for t in texts]
    assert BertTokenizer(DATA_VOCAB)(tf.constant(texts)).to_list() == expected


def test_words_over_200_characters_become_one_unk():
    layer = BertTokenizer(DATA_VOCAB)
    out = layer(tf.constant(["a" * 200, "a" * 201, "\u00e9" * 150])).to_list()
    assert out[1] == [1] and out[0] != [1]
    assert out[2] != [1]  # 300 bytes but 150 characters: not over the limit


def test_in_a_tf_data_pipeline(corpus_lines):
    layer = BertTokenizer(DATA_VOCAB)
    lines = corpus_lines[:300]
    ds = tf.data.Dataset.from_tensor_slices(lines).batch(64).map(layer)
    got = [row for batch in ds for row in batch.to_list()]
    assert got == layer(tf.constant(lines)).to_list()


def test_exported_saved_model_tokenizes_and_packs(tmp_path, corpus_lines):
    tokenizer = BertTokenizer(DATA_VOCAB)
    packer = BertPackInputs.from_vocabulary(tokenizer.vocabulary, seq_length=32)

    class Preprocess(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer, self.packer = tokenizer, packer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
        def __call__(self, a, b):
            return self.packer([self.tokenizer(a), self.tokenizer(b)])

    module = Preprocess()
    a, b = tf.constant(corpus_lines[:50]), tf.constant(corpus_lines[50:100])
    expected = module(a, b)
    tf.saved_model.save(module, str(tmp_path / "preprocess"))
    del module
    loaded = tf.saved_model.load(str(tmp_path / "preprocess"))
    got = loaded(a, b)
    for key in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(got[key], expected[key])


def test_config_round_trip():
    layer = BertTokenizer(DATA_VOCAB, do_lower_case=False, never_split=["[CLS]"])
    clone = BertTokenizer.from_config(layer.get_config())
    texts = tf.constant(["The Harbour [CLS] town", "\u039f\u0394\u039f\u03a3"])
    assert clone(texts).to_list() == layer(texts).to_list()
    basic = BertBasicTokenizer(never_split=["[SEP]"])
    assert BertBasicTokenizer.from_config(basic.get_config()).get_config() == basic.get_config()


def test_vocab_problems_name_the_file(tmp_path):
    no_unk = write_vocab(tmp_path / "no_unk.txt", ["[PAD]", "[CLS]", "[SEP]", "a"])
    with pytest.raises(ValueError, match=r"no_unk.txt.*no '\[UNK\]'"):
        BertTokenizer(no_unk)
    no_cls = write_vocab(tmp_path / "no_cls.txt", ["[PAD]", "[UNK]", "a"])
    with pytest.warns(UserWarning, match=r"no_cls.txt.*no \[CLS\] or \[SEP\]"):
        BertTokenizer(no_cls)
    with pytest.raises(ValueError, match="'a' twice"):
        BertTokenizer(["[UNK]", "a", "a"])
