"""bench/long_text.py in its smoke size: the sets are made, the reader is trained, each way of
reading is trained from it and served, and the table has a row of figures for each."""

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_trains_and_serves_each_way_of_reading():
    out = run_bench("long_text.py", "--smoke", timeout=600)
    assert 0 <= number(r"^reader: 8 short texts .* dev accuracy ([\d.]+)", out) <= 1
    assert number(r"^long set: (\d+) training", out) == 8
    for mode in ("truncation", "windows, max", "windows, mean"):
        accuracy = number(rf"^\| {mode} \| ([\d.]+) \|", out)
        assert 0 <= accuracy <= 1, out
        assert number(rf"^\| {mode} \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|", out) > 0  # ms per text
        assert number(rf"^\| {mode} \| [\d.]+ \| [\d.]+ \| [\d.]+ \| ([\d.]+)x \|", out) > 0  # longest / half
        assert number(rf"^\| {mode} \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+x \| (\d+) \|", out) > 0  # peak MB
