"""bench/extract_features.py in its smoke size: the encoder, the JSON lines and both together run."""

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_the_three_parts():
    out = run_bench("extract_features.py", "--smoke")
    assert "config: L=2 H=32 A=2 seq=32 batch=4 layers=-1,-2 backend=tensorflow" in out
    model = number(r"^encoder forward only: +([\d.]+) sequences/s$", out)
    json_lines = number(r"^JSON lines only: +([\d.]+) lines/s$", out)
    total = number(r"^end to end: +([\d.]+) lines/s", out)
    # Figures only: which is faster depends on the machine's load, and timings are never asserted.
    assert total > 0 and json_lines > 0 and model > 0
