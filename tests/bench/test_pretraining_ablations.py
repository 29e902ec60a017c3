"""bench/pretraining_ablations.py in its smoke size: the "No NSP, single segments" run's command
lines carry both flags and its table row has no next-sentence figure."""

import re

import pytest

from tests.bench.smoke import run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_pretrains_without_next_sentence(tmp_path):
    out = run_bench("pretraining_ablations.py", "--smoke", f"--work_dir={tmp_path}")
    commands = [line for line in out.splitlines() if line.startswith("run_scripts/")]
    assert [c.split()[0] for c in commands] == ["run_scripts/create_pretraining_data.py"] * 2 + [
        "run_scripts/run_pretraining.py"]
    assert "--next_sentence=false" in commands[1] and "--num_train_steps=2" in commands[2]
    assert "--next_sentence_prediction=false" in commands[2]
    row = re.search(r"^\| No NSP, single segments \| ([\d.]+) \| ([\d.]+) \| - \| \d+ s \|$", out, re.M)
    assert row, out
    assert 0 <= float(row.group(1)) <= 1 and float(row.group(2)) > 0
