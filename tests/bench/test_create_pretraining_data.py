"""bench/create_pretraining_data.py in its smoke size: our script and the original's procedure
run on the same generated corpus, and the table and ratio come out."""

import re

import pytest

from tests.bench.smoke import run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_ours_and_the_original():
    out = run_bench("create_pretraining_data.py", "--smoke")
    rows = dict(re.findall(r"^ +0\.1MB +(workers=1|original) +[\d.]+ +(\d+) +\d+ +\d+ +\d+$", out, re.M))
    assert sorted(rows) == ["original", "workers=1"], out
    # The same procedure on the same corpus: instance counts close (the random draws differ).
    ours, original = int(rows["workers=1"]), int(rows["original"])
    assert ours > 0 and abs(ours - original) <= 0.2 * original
    assert re.search(r"^ +0\.1MB one process / original \(own time\): [\d.]+x$", out, re.M)
