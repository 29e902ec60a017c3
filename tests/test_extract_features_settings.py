"""bert_tf.extract_features called from Python: a bad setting is a SettingError naming it, with
the line the script prints, before any work."""

import json

import pytest

from bert_tf.errors import SettingError
from bert_tf.extract_features import Settings, extract_features
from tests.tiny import tiny_config, write_vocab


def _settings(tmp_path, **values):
    config, vocab, input_file = tmp_path / "bert_config.json", tmp_path / "vocab.txt", tmp_path / "input.txt"
    config.write_text(json.dumps(tiny_config().to_dict()))
    write_vocab(str(vocab))
    input_file.write_text("the cat\n")
    given = dict(input_file=str(input_file), output_file=str(tmp_path / "out.jsonl"), vocab_file=str(vocab),
                 bert_config_file=str(config), init_checkpoint=str(tmp_path / "model.ckpt"), max_seq_length=12)
    return Settings(**{**given, **values})


@pytest.mark.parametrize("values, name, message", [
    (dict(batch_size=0), "batch_size", "--batch_size=0 must be positive"),
    (dict(max_seq_length=2), "max_seq_length", "--max_seq_length=2 leaves no room for [CLS] A [SEP] B [SEP]"),
    (dict(layers="-1,-5"), "layers", "--layers: layer index -5 is out of range for a model with 2 layers "
                                     "(valid: -2..1)"),
    (dict(length_bucket=4, pad_to_max_seq_length=True), "length_bucket",
     "--length_bucket=4 has no use with --pad_to_max_seq_length: every batch is padded to --max_seq_length"),
])
def test_a_bad_setting_is_an_error_naming_it_before_any_work(tmp_path, values, name, message):
    with pytest.raises(SettingError) as e:
        extract_features(_settings(tmp_path, **values))
    assert (e.value.setting, str(e.value)) == (name, message)
    assert not (tmp_path / "out.jsonl").exists()


def test_the_checkpoints_casing_is_checked_on_its_name(tmp_path):
    cased = tmp_path / "cased_L-12_H-768_A-12" / "bert_model.ckpt"
    with pytest.raises(SettingError) as e:
        extract_features(_settings(tmp_path, init_checkpoint=str(cased)))
    assert e.value.setting == "do_lower_case" and "seems to be a cased model" in str(e.value)


def test_a_value_of_the_wrong_kind_is_refused_when_the_settings_are_made():
    with pytest.raises(SettingError) as e:
        Settings(input_file="in.txt", batch_size="8")
    assert e.value.setting == "batch_size"
