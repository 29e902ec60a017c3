"""bench/optimizer_step.py in its smoke size: both optimizer updates are timed on the same model and
gradients, with their ratio, and end near each other (the fused kernel's float32 (1 - beta_2))."""

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_the_fused_and_the_keras_ops_update():
    out = run_bench("optimizer_step.py", "--smoke")
    # The smoke pre-training model: embeddings (1000 + 512 + 2) x 32 + LayerNorm 64; 2 blocks of
    # 8,544; pooler 1,056; masked-LM transform 1,056 + LayerNorm 64 + output bias 1,000; NSP 66.
    count = (1000 + 512 + 2) * 32 + 64 + 2 * 8544 + 1056 + 1056 + 64 + 1000 + 66
    assert f"{count:,} numbers" in out, out
    fused = number(r"^  fused    : +([\d.]+) ms per step", out)
    plain = number(r"^  keras.ops: +([\d.]+) ms per step", out)
    assert number(r"^  keras.ops / fused: ([\d.]+)x$", out) == pytest.approx(plain / fused, rel=0.02, abs=0.01)
    # 4 steps at learning rates up to 4e-5 (warm-up): the two rules stay within float32 noise of each other.
    assert number(r"weights after 4 steps differ by ([\d.e+-]+) at most", out) < 1e-6
