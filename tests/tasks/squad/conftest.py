"""The vocab and tokenizer of the tiny SQuAD files (`squad_files`), for the tests that use them."""

import pytest

from bert_tf.tokenization import FullTokenizer
from tests.tasks.squad.squad_files import VOCAB
from tests.tiny import write_vocab


@pytest.fixture
def vocab(tmp_path):
    return write_vocab(tmp_path / "vocab.txt", VOCAB)


@pytest.fixture
def tokenizer(vocab):
    return FullTokenizer(vocab)
