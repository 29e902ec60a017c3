"""Checks every layer and model shares (keras-hub style), and the owner tag of an ended process
for the tests of a killed writer's leftovers."""

import subprocess
import sys

import keras
import numpy as np

from bert_tf.io_utils import owner_tag


def assert_config_round_trip(obj):
    config = obj.get_config()
    clone = type(obj).from_config(config)
    assert clone.get_config() == config
    return clone


def assert_keras_file_round_trip(model, inputs, tmp_path, name="model"):
    """A `.keras` file saved from `model` loads back (by registered name) with equal outputs."""
    expected = model(inputs, training=False)
    path = str(tmp_path / f"{name}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    actual = loaded(inputs, training=False)
    for e, a in zip(keras.tree.flatten(expected), keras.tree.flatten(actual), strict=True):
        np.testing.assert_array_equal(np.asarray(e), np.asarray(a))
    return loaded


def dead_owner_tag():
    """`owner_tag` of a process of this host that has ended: what a killed writer's leftovers carry."""
    process = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                             text=True, check=True)
    return owner_tag(int(process.stdout))
