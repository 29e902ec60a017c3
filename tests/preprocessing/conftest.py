import pytest

from bert_tf.preprocessing import vocab_learning
from tests.preprocessing.corpus import prose_lines, random_lines


@pytest.fixture(scope="session")
def corpus_lines():
    return prose_lines() + random_lines()


@pytest.fixture(scope="session")
def learned_vocabs(corpus_lines, tmp_path_factory):
    """do_lower_case -> path of a vocab learned from the test corpus with that casing."""
    d = tmp_path_factory.mktemp("vocab")
    corpus = d / "corpus.txt"
    # One text per line for the learner: line breaks inside a text become spaces.
    corpus.write_text("\n".join(" ".join(line.splitlines()) for line in corpus_lines) + "\n", encoding="utf-8")
    out = {}
    for lower in (True, False):
        counts = vocab_learning.count_words([str(corpus)], do_lower_case=lower)
        vocab = vocab_learning.learn_vocabulary(counts, 4000, lower_thresh=2, upper_thresh=1000, num_iterations=2)
        out[lower] = str(d / f"vocab_{'uncased' if lower else 'cased'}.txt")
        vocab_learning.write_vocab(vocab, out[lower])
    return out


@pytest.fixture
def spy(monkeypatch):
    """spy(owner, name) -> the list of argument tuples of every (eager) call of owner.name, to show
    which road a test's lines took."""

    def install(owner, name):
        seen, original = [], getattr(owner, name)

        def record(*args):
            seen.append(args)
            return original(*args)

        monkeypatch.setattr(owner, name, record)
        return seen

    return install
