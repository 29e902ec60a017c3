"""bench/create_pretraining_data.py in its smoke size: our script (locally and on Beam's
DirectRunner) and the original's procedure run on the same generated corpus, and the table and
ratios come out."""

import re

import pytest

from tests.bench.smoke import run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_times_ours_the_beam_path_and_the_original():
    pytest.importorskip("apache_beam")
    out = run_bench("create_pretraining_data.py", "--smoke")
    row = r"^ +0\.1MB +(workers=1|beam=1|original) +[\d.]+ +(\d+) +\d+ +\d+ +\d+ +- +\d+ +[\d.]+$"
    rows = dict(re.findall(row, out, re.M))
    assert sorted(rows) == ["beam=1", "original", "workers=1"], out
    # The same procedure on the same corpus: instance counts close (the random draws differ);
    # the same shards on Beam: the same count.
    ours, original = int(rows["workers=1"]), int(rows["original"])
    assert ours > 0 and abs(ours - original) <= 0.2 * original and rows["beam=1"] == rows["workers=1"]
    assert re.search(r"^ +0\.1MB one process / original \(own time\): [\d.]+x$", out, re.M)
    assert re.search(r"^ +0\.1MB beam=1 / workers=1 \(own time\): [\d.]+x; instances per CPU second: [\d.]+x$",
                     out, re.M)
