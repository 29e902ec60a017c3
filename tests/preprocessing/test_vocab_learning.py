import os

import pytest

from bert_tf.preprocessing import vocab_learning
from bert_tf.tokenization import FullTokenizer
from tests.run_scripts.conftest import run_script

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data")


def test_reserved_layout_is_the_originals():
    assert vocab_learning.reserved_tokens() == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab_learning.reserved_tokens(2) == ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    full = vocab_learning.reserved_tokens(994)  # Google's vocab.txt files
    assert len(full) == 999
    assert full.index("[UNK]") == 100 and full.index("[CLS]") == 101
    assert full.index("[SEP]") == 102 and full.index("[MASK]") == 103
    assert full[1] == "[unused0]" and full[99] == "[unused98]" and full[104] == "[unused99]" and full[998] == "[unused993]"


def test_learned_vocab_covers_its_corpus(tmp_path):
    corpus = os.path.join(DATA, "corpus.txt")
    counts = vocab_learning.count_words([corpus])
    vocab = vocab_learning.learn_vocabulary(counts, 1000, num_unused=3, lower_thresh=1, upper_thresh=1000)
    assert len(vocab) <= 1000 and vocab[:5] == ["[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]"]
    path = tmp_path / "vocab.txt"
    vocab_learning.write_vocab(vocab, str(path))
    tokenizer = FullTokenizer(str(path))
    with open(corpus, encoding="utf-8") as f:
        pieces = [p for line in f for p in tokenizer.tokenize(line)]
    assert len(pieces) > 2000 and "[UNK]" not in pieces


def test_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size 5 leaves no room after 5 reserved tokens"):
        vocab_learning.learn_vocabulary({"a": 1}, 5)
    with pytest.raises(ValueError, match="no words"):
        vocab_learning.learn_vocabulary({}, 100)


@pytest.mark.slow
def test_script_reproduces_the_shipped_vocab(tmp_path):
    out = tmp_path / "vocab.txt"
    result = run_script(
        "learn_vocab.py",
        f"--input_file={os.path.join(DATA, 'corpus.txt')}",
        "--vocab_size=1000",
        "--lower_thresh=1",
        "--upper_thresh=1000",
        f"--output_file={out}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    with open(os.path.join(DATA, "vocab.txt"), encoding="utf-8") as f:
        assert out.read_text(encoding="utf-8") == f.read()


@pytest.mark.slow
def test_script_names_a_pattern_that_matches_nothing(tmp_path):
    result = run_script("learn_vocab.py", f"--input_file={tmp_path}/nothing*.txt", f"--output_file={tmp_path}/v.txt")
    assert result.returncode != 0 and "nothing*.txt' matches no file" in result.stderr
    assert not (tmp_path / "v.txt").exists()
