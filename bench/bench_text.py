"""The text the benches read: data/corpus.txt's sentences (real English, 7 to 16 words), and
data/vocab.txt padded with [unusedN] tokens to a model's vocabulary size (BERT's 30,522: tables of
BERT's size over words the corpus has). Imported by a bench from its own folder."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def corpus_sentences():
    """data/corpus.txt's non-blank lines, stripped."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def padded_vocab(directory, size):
    """Writes `directory`/vocab.txt: data/vocab.txt's tokens, then [unused0], ... up to `size`; returns its path."""
    with open(os.path.join(REPO, "data", "vocab.txt"), encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    tokens += [f"[unused{i}]" for i in range(size - len(tokens))]
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path
