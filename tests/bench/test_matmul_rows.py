"""bench/matmul_rows.py in its smoke size: TensorFlow's products timed for every row count and
shape asked, with variables and with constant weights (after a call of the same rows, and of the
largest); ONNX Runtime, not installed in the suite's environment, skipped with a message."""

import re

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_every_case_and_skips_a_missing_peer():
    out = run_bench("matmul_rows.py", "--smoke", "--rows=3,16", "--shapes=32x64,64x32")
    assert "ONNX Runtime skipped: onnxruntime and onnx are not installed (--peer_dirs)" in out
    assert "2 products per graph" in out
    assert "TF consts after 16 rows us" in out
    for rows in (3, 16):
        for shape in ("32x64", "64x32"):
            line = rf"^ +{rows} {shape} +([\d.]+) +- +- +([\d.]+) +([\d.]+)$"
            assert number(line, out) > 0
            found = re.search(line, out, re.M)
            assert float(found.group(2)) > 0 and float(found.group(3)) > 0
