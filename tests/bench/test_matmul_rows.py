"""bench/matmul_rows.py in its smoke size: TensorFlow's products timed for every row count and
shape asked; ONNX Runtime, not installed in the suite's environment, skipped with a message."""

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_every_case_and_skips_a_missing_peer():
    out = run_bench("matmul_rows.py", "--smoke", "--rows=3,16", "--shapes=32x64,64x32")
    assert "ONNX Runtime skipped: onnxruntime and onnx are not installed (--peer_dirs)" in out
    assert "2 products per graph" in out
    for rows in (3, 16):
        for shape in ("32x64", "64x32"):
            assert number(rf"^ +{rows} {shape} +([\d.]+)$", out) > 0
