"""jit_compile resolved per platform: given values win; unset, XLA on GPU and TPU and the
measured choice (off) on CPU."""

import pytest

from bert_tf.training import speed


@pytest.mark.parametrize(
    "given, platform, expected",
    [
        (None, "cpu", False), (None, "gpu", True), (None, "tpu", True),
        (True, "cpu", True), (False, "gpu", False), (False, "tpu", False),
    ],
)
def test_given_value_wins_else_the_platform_default(given, platform, expected):
    assert speed.resolve_jit_compile(given, platform) is expected


def test_bad_values_name_the_setting():
    with pytest.raises(ValueError, match=r"^jit_compile='yes' must be True, False or None"):
        speed.resolve_jit_compile("yes", "cpu")
    with pytest.raises(ValueError, match=r"^platform='npu' is not one of cpu, gpu, tpu"):
        speed.resolve_jit_compile(None, "npu")


def test_platform_here():
    assert speed.current_platform(use_tpu=True) == "tpu"
    assert speed.current_platform() in ("cpu", "gpu")


def test_resolved_for_this_process():
    assert speed.jit_compile_for(None, use_tpu=True) is True
    assert speed.jit_compile_for(False, use_tpu=True) is False
    assert speed.jit_compile_for(True) is True
