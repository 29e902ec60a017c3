import os
import re

import pytest

from bert_tf.preprocessing import vocab_learning
from bert_tf.tokenization import FullTokenizer
from tests.run_scripts.conftest import run_script
from tests.run_scripts.script_cases import run_cases

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data")


def test_reserved_layout_is_the_originals():
    assert vocab_learning.reserved_tokens() == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab_learning.reserved_tokens(2) == ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    full = vocab_learning.reserved_tokens(994)  # Google's vocab.txt files
    assert len(full) == 999
    assert full.index("[UNK]") == 100 and full.index("[CLS]") == 101
    assert full.index("[SEP]") == 102 and full.index("[MASK]") == 103
    assert (
        full[1] == "[unused0]" and full[99] == "[unused98]" and full[104] == "[unused99]" and full[998] == "[unused993]"
    )


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
    with pytest.raises(ValueError, match="num_unused_tokens -1 must be a non-negative integer"):
        vocab_learning.reserved_tokens(-1)


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
def test_script_checks_flags_and_paths_before_any_work_and_a_full_disk_leaves_nothing(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(open(os.path.join(DATA, "corpus.txt"), "rb").read())
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    common = ["--vocab_size=4000", "--lower_thresh=1", "--upper_thresh=1000"]
    cases = [
        (
            [f"--input_file={tmp_path}/nothing*.txt", f"--output_file={tmp_path / 'v.txt'}"],
            r"nothing\*.txt' matches no file",
        ),
        (
            [f"--input_file={corpus}", f"--output_file={tmp_path / 'v.txt'}", "--num_unused_tokens=-3"],
            r"--num_unused_tokens=-3 must not be negative",
        ),
        (
            [f"--input_file={corpus}", f"--output_file={tmp_path / 'v.txt'}", "--vocab_size=5"],
            r"--vocab_size=5 leaves no room after 5 reserved tokens",
        ),
        ([f"--input_file={corpus}", f"--output_file={tmp_path / 'folder'}"], r"--output_file=.*folder is a directory"),
        (
            [f"--input_file={corpus}", f"--output_file={tmp_path / 'file' / 'v.txt'}"],
            r"v.txt is under .*file, which is a file",
        ),
        (
            [f"--input_file={tmp_path / 'folder'}", f"--output_file={tmp_path / 'v.txt'}"],
            r"--input_file: .*folder is a directory, not a file",
        ),
        (
            [f"--input_file={corpus}", f"--output_file={corpus}"],
            r"--output_file=.*corpus.txt is the input file --input_file=.*corpus.txt",
        ),
        # A full disk (see script_cases): 3,000 unused slots make the file larger than 30 kB.
        (
            [f"--input_file={corpus}", f"--output_file={tmp_path / 'full.txt'}", "--num_unused_tokens=3000"],
            r"writing --output_file=.*full.txt failed: File too large",
        ),
    ]
    outcomes, _, _ = run_cases("learn_vocab", [[*common, *flags] for flags, _ in cases])
    for (flags, message), outcome in zip(cases, outcomes, strict=True):
        assert outcome.startswith("learn_vocab.py: error: ") and re.search(message, outcome), (flags, outcome)
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "file", "folder"]
