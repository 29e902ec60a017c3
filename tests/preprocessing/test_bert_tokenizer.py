"""The in-graph tokenizer against FullTokenizer (itself checked against hand-written token
lists in tests/test_tokenization.py) on real prose and on random text from every Unicode area
the rules treat specially; test_bert_basic_tokenizer.py takes the basic step road by road."""

import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.preprocessing import BertBasicTokenizer, BertPackInputs, BertTokenizer
from bert_tf.tokenization import FullTokenizer
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


def _ascii_text(count, seed=0):
    """Random printable ASCII lines: words and pieces of the tricky vocab below, every
    punctuation byte, whitespace runs, words around the 200-character limit."""
    rng = random.Random(seed)
    pool = ["the", "harbour", "town", "un", "##want", "##ed", "a b", "x\ty", "a.b", "##.", "##", "[UNK]"]
    pool += [chr(c) for c in range(32, 127)] + [" ", "  ", "\t", "\r\n"] * 4
    pool += ["a" * 200, "a" * 201, "b" * 199 + ".", "T" * 200 + "HE", "Un" + "want" * 50]
    return ["".join(rng.choice(pool) for _ in range(rng.randint(0, 30))) for _ in range(count)]


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_ascii_lines_take_the_end_to_end_wordpiece_road(tmp_path, spy, do_lower_case):
    """tensorflow-text's own splitting is the original's on ASCII: whitespace, punctuation bytes,
    the 200-character limit, vocab tokens with punctuation or whitespace inside (unmatchable)."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "harbour", "town", "un", "##want", "##ed", "want"]
    tokens += ["a b", "x\ty", "a.b", "##.", "##", ".", "'", "a", "##a", "b", "##b", "x", "y", "t", "T", "##HE", "Un"]
    vocab = write_vocab(tmp_path / "v.txt", tokens)
    lines = _ascii_text(1500) + ["a" * 200, "a" * 201, "", " \t "]
    python = FullTokenizer(vocab, do_lower_case=do_lower_case)
    expected = [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines]
    layer = BertTokenizer(vocab, do_lower_case=do_lower_case)
    end_to_end = spy(layer._ascii_wordpiece, "tokenize")
    word_by_word = spy(layer._wordpiece, "tokenize")
    shown, count = _mismatches(expected, layer(tf.constant(lines)).to_list(), lines)
    assert count == 0, "\n".join(shown)
    assert end_to_end[0][0].shape == (len(lines),) and word_by_word[0][0].shape == (0,)
    flat = [i for ids in expected for i in ids]
    assert flat.count(1) > 100 and len(set(flat)) > 10  # [UNK] and real pieces both occur


def test_never_split_keeps_special_tokens_whole(tmp_path):
    vocab = write_vocab(
        tmp_path / "v.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "[", "]", "mask", "!", "x", "cls"]
    )
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
    texts = [
        b"caf\xc3",
        b"\xff\xfethe town",
        b"the\xe2\x82 town",
        b"\xed\xa0\x80river",
        b"a\xc0\xafb",
        b"\xf4\x90\x80\x80x",
    ]
    expected = [python.convert_tokens_to_ids(python.tokenize(t)) for t in texts]
    assert BertTokenizer(DATA_VOCAB)(tf.constant(texts)).to_list() == expected


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_words_over_200_characters_become_one_unk(tmp_path, do_lower_case):
    """The limit counts characters: 150 two-byte characters (300 bytes) are no long word."""
    tokens = ["[UNK]", "[CLS]", "[SEP]", "a", "##a", "\u03b1", "##\u03b1", "\u00e9", "##\u00e9"]
    vocab = write_vocab(tmp_path / "v.txt", tokens)
    python = FullTokenizer(vocab, do_lower_case=do_lower_case)
    lines = ["a" * 200, "a" * 201, "\u03b1" * 150, "\u03b1" * 200 + " a", "\u03b1" * 201, "\u00e9" * 150]
    expected = [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines]
    assert expected[1] == [0] and expected[4] == [0] and len(expected[2]) == 150  # both cases occur
    assert BertTokenizer(vocab, do_lower_case=do_lower_case)(tf.constant(lines)).to_list() == expected


@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_in_a_tf_data_pipeline(corpus_lines, do_lower_case):
    python = FullTokenizer(DATA_VOCAB, do_lower_case=do_lower_case)
    lines = corpus_lines[:300] + corpus_lines[-300:]  # prose (mostly ASCII) and random Unicode
    layer = BertTokenizer(DATA_VOCAB, do_lower_case=do_lower_case)
    ds = tf.data.Dataset.from_tensor_slices(lines).batch(64)
    ds = ds.map(layer, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    got = [row for batch in ds for row in batch.to_list()]
    assert got == [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines]


@pytest.mark.parametrize("never_split", [None, ["[CLS]"]], ids=["plain", "never_split"])
@pytest.mark.parametrize("do_lower_case", [True, False], ids=["uncased", "cased"])
def test_graph_has_no_control_flow_and_stays_small(do_lower_case, never_split):
    """tf.data instantiates a map function again for every iterator (every epoch) at a cost that
    grows with its graph: the roads are chosen per line by data, not per batch by tf.cond/tf.case
    (the former graph had 1,566 nodes and 20 branch functions, 0.3-0.6 s per iterator)."""
    layer = BertTokenizer(DATA_VOCAB, do_lower_case=do_lower_case, never_split=never_split)
    spec = tf.TensorSpec([None], tf.string)
    graph = tf.function(lambda text: layer(text), input_signature=[spec]).get_concrete_function().graph
    graph_def = graph.as_graph_def()
    assert not graph_def.library.function
    control_flow = {"If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile"}
    assert not [n.name for n in graph_def.node if n.op in control_flow]
    assert len(graph_def.node) < 600


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
