"""First-sub-token labels and windows: FullTokenizer's pieces, each word tagged exactly once."""

import random

import numpy as np
import pytest

from bert_tf.preprocessing import BertTokenizer
from bert_tf.tasks.ner.conll import Sentence
from bert_tf.tasks.ner.inputs import encode_sentences, tags_of, windows, word_pieces
from bert_tf.tokenization import FullTokenizer
from tests.tiny import VOCAB, write_vocab

CASED_VOCAB = VOCAB + ["Paris", "paris", "The", "Un", "##ned", "New", "York", "naïve", "na", "##ive", "Ö"]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def _tokenizers(tmp_path, do_lower_case):
    path = write_vocab(tmp_path / "vocab.txt", CASED_VOCAB)
    return BertTokenizer(path, do_lower_case=do_lower_case), FullTokenizer(path, do_lower_case=do_lower_case)


WORDS = ["Paris", "paris", "The", "unwanted", "Unwanted", "running", "New", "York", "naïve", "Ö", "U.S.",
         "cat's", "xyzzy", "\x07", "\u200b", "dog"]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_each_word_gets_fulltokenizers_pieces_and_an_unk_when_it_has_none(tmp_path, do_lower_case):
    tokenizer, full = _tokenizers(tmp_path, do_lower_case)
    pieces = word_pieces(WORDS + ["Paris"], tokenizer)
    assert list(pieces) == WORDS  # each distinct word once
    for word in WORDS:
        expected = full.convert_tokens_to_ids(full.tokenize(word)) or [full.vocab["[UNK]"]]
        assert pieces[word] == expected, word
    # Casing matters: the cased model keeps "Paris" and "paris" apart.
    assert (pieces["Paris"] == pieces["paris"]) == do_lower_case
    assert pieces["\x07"] == [full.vocab["[UNK]"]]  # stripped by the original: nothing left


def test_windows_of_a_hand_worked_sentence():
    # Capacity 8, up to 2 context words of at most 4 pieces.
    assert windows([3, 1, 2, 4, 1, 1, 5, 2], 8, 2) == [(0, 0, 3), (1, 3, 5), (4, 5, 7), (7, 7, 8)]
    assert windows([3, 1, 2, 4, 1, 1, 5, 2], 8, 0) == [(0, 0, 3), (3, 3, 6), (6, 6, 8)]
    assert windows([2, 2], 8, 3) == [(0, 0, 2)]  # a short sentence: one window
    assert windows([8, 8, 1], 8, 3) == [(0, 0, 1), (1, 1, 2), (2, 2, 3)]  # no context of over half the pieces
    assert windows([2, 7], 8, 3) == [(0, 0, 1), (1, 1, 2)]  # nor one that leaves no room for the word
    with pytest.raises(ValueError, match="between 1 and capacity 8"):
        windows([9], 8, 0)


def test_windows_tag_every_word_once_and_follow_the_stated_rule():
    rng = random.Random(0)
    for _ in range(300):
        capacity = rng.randint(1, 30)
        counts = [rng.randint(1, min(capacity, rng.choice([1, 3, 8]))) for _ in range(rng.randint(1, 60))]
        _check_windows(counts, capacity, rng.randint(0, 5))


def _check_windows(counts, capacity, context_words):
    result = windows(counts, capacity, context_words)

    def pieces(a, b):
        return sum(counts[a:b])

    # The tagged spans cover the sentence in order, each word once; the first has no context.
    assert [s for _, s, _ in result] == [0] + [e for _, _, e in result[:-1]]
    assert result[-1][2] == len(counts) and result[0][:2] == (0, 0)
    for left, start, end in result:
        assert left <= start < end and pieces(left, end) <= capacity
        # As many words as fit.
        assert end == len(counts) or pieces(left, end + 1) > capacity
        # Context: at most context_words words and half the pieces, room for word `start`, and
        # one word more would break one of these.
        assert start - left <= context_words and pieces(left, start) <= capacity // 2
        assert left == 0 or start - left == context_words or pieces(left - 1, start) > capacity // 2 or (
            pieces(left - 1, start + 1) > capacity
        )


def test_labels_go_on_first_pieces_and_long_sentences_are_windowed(tmp_path):
    tokenizer, full = _tokenizers(tmp_path, do_lower_case=False)
    short = Sentence(
        ["The", "unwanted", "cat", "runs", "to", "Paris", "\x07"], ["O", "O", "B-PER", "O", "O", "B-LOC", "O"]
    )
    rng = random.Random(0)
    words = [rng.choice(["New", "York", "running", "naïve", "cat", "xyzzy", "U.S."]) for _ in range(30)]
    long = Sentence(words, [rng.choice(LABELS) for _ in words])
    untagged = Sentence(["Paris", "is", "big"])
    max_seq_length, context = 16, 3
    features = encode_sentences([short, long, untagged], LABELS, tokenizer, max_seq_length, context)

    unk, cls, sep = full.vocab["[UNK]"], full.vocab["[CLS]"], full.vocab["[SEP]"]
    rows = 0
    for number, sentence in enumerate([short, long, untagged]):
        pieces = [full.convert_tokens_to_ids(full.tokenize(w)) or [unk] for w in sentence.words]
        for left, start, end in windows([len(p) for p in pieces], max_seq_length - 2, context):
            ids, labels, weights = [cls], [0], [0.0]
            for i in range(left, end):
                ids += pieces[i]
                label = LABELS.index(sentence.tags[i]) if sentence.tags and i >= start else 0
                labels += [label] + [0] * (len(pieces[i]) - 1)
                weights += [float(i >= start)] + [0.0] * (len(pieces[i]) - 1)
            pad = [0] * (max_seq_length - len(ids) - 1)
            np.testing.assert_array_equal(features["input_word_ids"][rows], ids + [sep] + pad)
            np.testing.assert_array_equal(features["input_mask"][rows], [1] * (len(ids) + 1) + pad)
            np.testing.assert_array_equal(features["label_ids"][rows], labels + [0] + pad)
            np.testing.assert_array_equal(features["label_weights"][rows], weights + [0.0] + pad)
            assert features["sentence"][rows] == number
            rows += 1
    assert rows == len(features["sentence"]) and rows > 4  # the long sentence took several windows
    assert not features["input_type_ids"].any()
    lengths = [len(s.words) for s in (short, long, untagged)]
    recovered = tags_of(features["label_ids"], features["label_weights"], lengths)
    assert [[LABELS[i] for i in r] for r in recovered[:2]] == [short.tags, long.tags]
    # Rows of padding (no weight) change nothing.
    padded = {k: np.concatenate([features[k], np.zeros((3,) + features[k].shape[1:], features[k].dtype)])
              for k in ("label_ids", "label_weights")}
    assert tags_of(padded["label_ids"], padded["label_weights"], lengths) == recovered
    with pytest.raises(ValueError, match="40 tagged positions for 41 words"):
        tags_of(features["label_ids"], features["label_weights"], [*lengths[:-1], 4])


def test_a_tag_outside_the_labels_names_the_sentence(tmp_path):
    tokenizer, _ = _tokenizers(tmp_path, do_lower_case=True)
    with pytest.raises(ValueError, match="train.txt:7: tag 'B-ORG' is not one of the model's labels"):
        encode_sentences([Sentence(["cat"], ["B-ORG"], "train.txt:7")], LABELS, tokenizer, 8)
