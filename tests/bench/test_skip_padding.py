"""bench/skip_padding.py in its smoke size: both sides of the training step and the inference call
timed on a batch with padding, their ratios printed as the ratios of the printed times."""

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_both_sides_of_training_and_inference():
    out = run_bench("skip_padding.py", "--smoke")
    real = number(r"^lengths 3-9 \(longest \d+, (\d+)% real tokens\)", out)
    assert 0 < real < 100, out  # the batch has padding to skip
    for name in ("train", "infer"):
        skipped = number(rf"^  {name}: skipped ([\d.]+) ms", out)
        plain = number(rf"^  {name}: skipped [\d.]+ ms, not ([\d.]+) ms", out)
        assert number(rf"^  {name}: .* skipped / not ([\d.]+)x$", out) == pytest.approx(skipped / plain, rel=0.02,
                                                                                       abs=0.002)
