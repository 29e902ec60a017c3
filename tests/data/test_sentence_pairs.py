from bert_tf.data.sentence_pairs import pack_tokens, truncate_seq_pair


class _Ids:
    def convert_tokens_to_ids(self, tokens):
        return [len(t) for t in tokens]  # any deterministic map will do


def test_truncate_pops_from_the_longer_then_from_b_on_ties():
    a, b = list("abcde"), list("xyz")
    truncate_seq_pair(a, b, 6)
    assert (a, b) == (list("abc"), list("xyz"))
    a, b = list("abc"), list("xyz")
    truncate_seq_pair(a, b, 5)
    assert (a, b) == (list("abc"), list("xy"))


def test_pack_single_and_pair():
    single = pack_tokens(["aa", "b"], None, 6, _Ids())
    assert single.tokens == ["[CLS]", "aa", "b", "[SEP]"]
    assert single.input_word_ids == [5, 2, 1, 5, 0, 0]
    assert single.input_mask == [1, 1, 1, 1, 0, 0]
    assert single.input_type_ids == [0, 0, 0, 0, 0, 0]

    pair = pack_tokens(["a", "b", "c", "d"], ["x"], 7, _Ids())
    assert pair.tokens == ["[CLS]", "a", "b", "c", "[SEP]", "x", "[SEP]"]
    assert pair.input_type_ids == [0, 0, 0, 0, 0, 1, 1]
    assert pair.input_mask == [1] * 7

    long_single = pack_tokens(list("abcdefgh"), [], 5, _Ids())
    assert long_single.tokens == ["[CLS]", "a", "b", "c", "[SEP]"]
