"""One shared check for every layer and model (keras-hub style)."""

import keras
import numpy as np


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
