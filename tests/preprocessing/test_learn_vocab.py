"""bert_tf.preprocessing.learn_vocab called from Python: the vocabulary learn_vocab.py writes, and
a bad setting as a SettingError naming it, with the line the script prints, before any work."""

import os

import pytest

from bert_tf.errors import SettingError
from bert_tf.preprocessing.learn_vocab import Settings, learn_vocab

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data")
CORPUS = os.path.join(DATA, "corpus.txt")


@pytest.mark.parametrize("values, name, message", [
    (dict(num_unused_tokens=-3), "num_unused_tokens", "--num_unused_tokens=-3 must not be negative"),
    (dict(vocab_size=5), "vocab_size", "--vocab_size=5 leaves no room after 5 reserved tokens "
                                       "(--num_unused_tokens=0)"),
    (dict(input_file="{tmp}/nothing*.txt"), "input_file", None),
    (dict(output_file="{tmp}"), "output_file", "--output_file={tmp} is a directory; name a file to write"),
    (dict(output_file=CORPUS), "output_file", None),
])
def test_a_bad_setting_is_an_error_naming_it_before_any_work(tmp_path, values, name, message):
    values = {key: value.format(tmp=tmp_path) if isinstance(value, str) else value for key, value in values.items()}
    settings = Settings(**{"input_file": CORPUS, "output_file": str(tmp_path / "vocab.txt"), **values})
    with pytest.raises(SettingError) as e:
        learn_vocab(settings)
    assert e.value.setting == name
    if message is not None:
        assert str(e.value) == message.format(tmp=tmp_path)
    assert not os.path.exists(tmp_path / "vocab.txt")


def test_the_library_call_writes_the_shipped_vocab(tmp_path):
    out = tmp_path / "vocab.txt"
    vocab = learn_vocab(Settings(input_file=CORPUS, output_file=str(out), vocab_size=1000, lower_thresh=1,
                                 upper_thresh=1000))
    with open(os.path.join(DATA, "vocab.txt"), encoding="utf-8") as f:
        assert out.read_text(encoding="utf-8") == f.read() == "".join(f"{token}\n" for token in vocab)
