"""save_keras_model writes atomically and with the user's umask, as any file Keras writes."""

import os

from bert_tf import BertEncoder
from bert_tf.checkpoints import load_keras_model, save_keras_model
from tests.helpers import dead_owner_tag
from tests.tiny import tiny_config


def test_keras_files_get_the_users_umask_and_no_temporary_file_is_left(tmp_path):
    encoder = BertEncoder.from_bert_config(tiny_config())
    old = os.umask(0o027)
    try:
        path = save_keras_model(encoder, str(tmp_path / "encoder.keras"))
    finally:
        os.umask(old)
    assert os.stat(path).st_mode & 0o777 == 0o640  # not mkstemp's 0600
    assert os.listdir(tmp_path) == ["encoder.keras"]
    assert load_keras_model(path).bert_config() == tiny_config()


def test_a_killed_saves_temporary_is_removed_by_the_next_save(tmp_path):
    left = tmp_path / f".encoder.keras.{dead_owner_tag()}.0a1b2c3d.keras"
    left.write_bytes(b"half a zip")
    save_keras_model(BertEncoder.from_bert_config(tiny_config()), str(tmp_path / "encoder.keras"))
    assert os.listdir(tmp_path) == ["encoder.keras"]
