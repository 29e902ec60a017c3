"""The run's settings: LoRA's and the padding's, checked and resolved as the scripts' flags give them."""

import pytest

from bert_tf.training.settings import TrainingSettings, lora_settings


def test_lora_alpha_defaults_to_the_rank_and_is_none_without_lora():
    assert lora_settings() == {"lora_rank": 0, "lora_alpha": None}
    assert lora_settings(8) == {"lora_rank": 8, "lora_alpha": 8.0}
    assert lora_settings(8, 16) == {"lora_rank": 8, "lora_alpha": 16.0}
    settings = TrainingSettings(output_dir="/tmp/x", lora_rank=4)
    assert (settings.lora_rank, settings.lora_alpha) == (4, 4.0)


@pytest.mark.parametrize("rank, alpha, message", [
    (-1, None, "lora_rank=-1 must be a non-negative integer (0: LoRA off)"),
    (2.5, None, "lora_rank=2.5 must be a non-negative integer (0: LoRA off)"),
    (0, 16.0, "lora_alpha=16.0 is given without lora_rank: LoRA is off"),
    (4, 0.0, "lora_alpha=0.0 must be positive"),
    (4, float("nan"), "lora_alpha=nan must be positive"),
])
def test_bad_lora_settings_name_the_setting(rank, alpha, message):
    with pytest.raises(ValueError) as e:
        lora_settings(rank, alpha)
    assert str(e.value) == message
    with pytest.raises(ValueError) as e:
        TrainingSettings(output_dir="/tmp/x", lora_rank=rank, lora_alpha=alpha)
    assert str(e.value) == message


def test_the_default_bucket_is_exact_without_xla_and_8_with_it():
    from bert_tf.training.settings import padding_settings

    assert padding_settings() == {"length_bucket": 1, "group_by_length": False}
    assert padding_settings(jit_compile=True) == {"length_bucket": 8, "group_by_length": False}
    given = padding_settings(16, jit_compile=True, group_by_length=True)
    assert given == {"length_bucket": 16, "group_by_length": True}
    assert padding_settings(pad_to_max_seq_length=True, jit_compile=True)["length_bucket"] is None
    with pytest.raises(ValueError, match="length_bucket=0 must be a positive integer"):
        padding_settings(0)


def test_padding_is_skipped_by_default_on_cpu_without_xla_where_batches_are_cut():
    from bert_tf.training.settings import default_skip_padding

    assert default_skip_padding(1, False, "cpu") and default_skip_padding(8, False, "cpu")
    assert not default_skip_padding(None, False, "cpu")  # fixed shapes: the original's graph
    assert not default_skip_padding(8, True, "cpu")  # XLA compiles fixed shapes
    assert not default_skip_padding(1, False, "gpu") and not default_skip_padding(None, False, "tpu")
    assert not TrainingSettings(output_dir="/tmp/x").skip_padding
    with pytest.raises(ValueError, match="^skip_padding needs jit_compile off"):
        TrainingSettings(output_dir="/tmp/x", jit_compile=True, skip_padding=True)
