"""bench/feature_based_ner.py in its smoke size: fine-tuning and one feature-based row run through
run_ner.py and report entity F1."""

import json
import re

import pytest

from tests.bench.smoke import run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_reports_both_approaches(tmp_path):
    out = run_bench("feature_based_ner.py", "--smoke", f"--output_dir={tmp_path}")
    f1 = r"([\d.]+) \([\d.]+-[\d.]+\)"
    rows = re.findall(rf"^\| (\(fine-tuning\)|--feature_based=\w+) \| {f1} \| {f1} \| \d+ \|$", out, re.M)
    assert [r[0] for r in rows] == ["(fine-tuning)", "--feature_based=weighted_sum_last_four"], out
    assert all(0 <= float(v) <= 1 for r in rows for v in r[1:])
    # Each row ran with its own settings: the feature-based run's record names its layers, fine-tuning's none.
    records = {name: json.loads((tmp_path / f"{name}_1" / "fine_tuning_task.json").read_text())
               for name in ("fine_tuning", "weighted_sum_last_four")}
    assert records["weighted_sum_last_four"].get("feature_based") == "weighted_sum_last_four"
    assert not records["fine_tuning"].get("feature_based")
