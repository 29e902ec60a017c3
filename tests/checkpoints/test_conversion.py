"""convert_checkpoint(settings) from Python: a bad setting is a SettingError naming it, with the
line the script prints, before any work."""

import pytest

from bert_tf.checkpoints.conversion import Settings, convert_checkpoint
from bert_tf.errors import SettingError


@pytest.mark.parametrize(
    "values, setting, message",
    [
        ({"checkpoint_to_convert": "ckpt", "converted_checkpoint_path": "x.keras"}, "direction",
         "--direction is required"),
        ({"direction": "to_keras", "checkpoint_to_convert": "{tmp}/bert_model.ckpt",
          "converted_checkpoint_path": "{tmp}/x.keras"}, "bert_config_file",
         "--direction=to_keras needs --bert_config_file"),
        ({"direction": "to_keras", "bert_config_file": "{tmp}/bert_config.json",
          "checkpoint_to_convert": "{tmp}/bert_model.ckpt", "converted_checkpoint_path": "{tmp}/x.h5"},
         "converted_checkpoint_path", "--converted_checkpoint_path={tmp}/x.h5 must end in .keras"),
        ({"direction": "to_original", "checkpoint_to_convert": "{tmp}/model.keras",
          "converted_checkpoint_path": "{tmp}"}, "converted_checkpoint_path",
         "--converted_checkpoint_path={tmp} is a directory; give a checkpoint prefix such as {tmp}/bert_model.ckpt"),
        ({"direction": "to_hf", "checkpoint_to_convert": "{tmp}/model.keras",
          "converted_checkpoint_path": "{tmp}/model.keras"}, "converted_checkpoint_path",
         "--converted_checkpoint_path={tmp}/model.keras is --checkpoint_to_convert: it would be overwritten"),
    ],
)
def test_a_bad_setting_is_a_setting_error_naming_it(tmp_path, values, setting, message):
    settings = Settings(**{name: value.format(tmp=tmp_path) for name, value in values.items()})
    with pytest.raises(SettingError) as raised:
        convert_checkpoint(settings)
    assert (raised.value.setting, raised.value.message) == (setting, message.format(tmp=tmp_path))


def test_an_error_of_the_conversion_names_the_setting_its_message_starts_with(tmp_path):
    settings = Settings(direction="to_original", checkpoint_to_convert=str(tmp_path / "missing.keras"),
                        converted_checkpoint_path=str(tmp_path / "out" / "bert_model.ckpt"))
    with pytest.raises(SettingError, match="^--checkpoint_to_convert: .* does not exist") as raised:
        convert_checkpoint(settings)
    assert raised.value.setting == "checkpoint_to_convert"
    with pytest.raises(SettingError) as raised:
        Settings(direction="sideways")
    assert raised.value.setting == "direction"
