"""What every run does with its settings before the loop: state a process keeps between runs is
set by each run, as a notebook or a search runs several in one process."""

import types

import keras


def _settings(mixed_precision):
    return types.SimpleNamespace(mixed_precision=mixed_precision, distribution_strategy="one_device", use_tpu=False,
                                 num_gpus=0, num_cpu_devices=0, tpu_name=None, master=None, tpu_zone=None,
                                 gcp_project=None, given=frozenset())


def test_a_runs_precision_is_its_own_not_the_previous_runs():
    from bert_tf.training import prepare

    try:
        prepare.strategy(_settings("bf16"))
        assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
        prepare.strategy(_settings("none"))
        assert keras.mixed_precision.global_policy().name == "float32"
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_splitting_the_cpu_after_tensorflow_started_is_a_setting_error():
    import pytest
    import tensorflow as tf

    from bert_tf.errors import SettingError
    from bert_tf.training import prepare

    tf.constant(1.0) + 1.0  # TensorFlow has made its devices
    with pytest.raises(SettingError) as e:
        prepare.split_cpu(types.SimpleNamespace(num_cpu_devices=3))
    assert e.value.setting == "num_cpu_devices"
    assert str(e.value).startswith("--num_cpu_devices=3: cannot split the CPU into 3 devices after TensorFlow started")
