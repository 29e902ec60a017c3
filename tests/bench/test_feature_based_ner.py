"""bench/feature_based_ner.py in its smoke size: a feature-based row runs through run_ner.py with
its flags and reports entity F1."""

import json
import re

import pytest

from tests.bench.smoke import run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_reports_a_feature_based_row(tmp_path):
    out = run_bench("feature_based_ner.py", "--smoke", f"--output_dir={tmp_path}")
    f1 = r"([\d.]+) \([\d.]+-[\d.]+\)"
    rows = re.findall(rf"^\| (\(fine-tuning\)|--feature_based=\w+) \| {f1} \| {f1} \| \d+ \|$", out, re.M)
    assert [r[0] for r in rows] == ["--feature_based=weighted_sum_last_four"], out
    assert all(0 <= float(v) <= 1 for r in rows for v in r[1:])
    # run_ner got the row's flags: its run record names the layers and the BiLSTM's width (the bench's 64).
    record = json.loads((tmp_path / "weighted_sum_last_four_1" / "fine_tuning_task.json").read_text())
    assert (record["feature_based"], record["lstm_units"]) == ("weighted_sum_last_four", 64)
