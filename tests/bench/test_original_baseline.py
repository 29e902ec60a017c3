"""bench/original_baseline.py in its smoke mode: the original's procedure over data/corpus.txt."""

import os

import pytest

from tests.bench.smoke import REPO, number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_makes_instances_from_every_document():
    out = run_bench("original_baseline.py", "--smoke")
    instances = number(r"^BASELINE instances=(\d+) own_seconds=[\d.]+$", out)
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        documents = [d for d in f.read().split("\n\n") if d.strip()]
    # The original makes at least one instance of every document (one sentence: with a random B).
    assert instances >= len(documents) > 1
