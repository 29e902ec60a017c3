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


def test_a_setting_changed_by_replace_counts_as_given():
    """`dataclasses.replace` keeps its original's `given`: a value it changes must count too, or a
    Hugging Face folder's casing would silently win over the one asked for."""
    import dataclasses

    from bert_tf.fields import given
    from bert_tf.tasks import classifier

    settings = classifier.Settings(output_dir="/o", task_name="MRPC")
    assert not given(settings, "do_lower_case")
    changed = dataclasses.replace(settings, do_lower_case=False)
    assert given(changed, "do_lower_case") and given(changed, "task_name") and not given(changed, "max_seq_length")


def test_an_error_about_a_listed_setting_names_it():
    import pytest

    from bert_tf.errors import SettingError, reported
    from bert_tf.training import search

    for values, name in (((3e-3, 3e-3), "learning_rate"), ("abc", "learning_rate"), ((), "learning_rate")):
        with pytest.raises(SettingError) as e, reported(flag_names=("output_dir", "learning_rate")):
            search.grid(values, 32, 3.0, 1, 12345)
        assert e.value.setting == name, (values, e.value)
    with pytest.raises(SettingError) as e, reported(flag_names=("output_dir", "restarts")):
        search.grid(1e-3, 32, 3.0, 0, 12345)
    assert e.value.setting == "restarts" and str(e.value) == "--restarts=0: must be at least 1"
