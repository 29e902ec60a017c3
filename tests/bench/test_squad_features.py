"""bench/squad_features.py in its smoke size, run from the repository root as its docstring says:
our features and the original's procedure (tests/original_squad.py) write the same records, and
the prediction throughput runs."""

import re

import pytest

from tests.bench.smoke import finished_bench

pytestmark = pytest.mark.slow


def test_smoke_run_writes_the_originals_records():
    flags = ["--questions=40", "--sizes=1", "--original_sizes=1", "--predict_shape=1,32,2,64", "--predict_batch_size=4",
             "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16"]
    # As a user starts it: no PYTHONPATH, the bench finds this checkout's bert_tf and tests itself.
    result = finished_bench("squad_features.py", *flags)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    rows = re.findall(r"^ +40 +[\d.]+ +(ours|original) +(\d+) +(\d+) ", result.stdout, re.M)
    assert [(kind, int(examples)) for kind, examples, _ in rows] == [("ours", 40), ("original", 40)]
    features = int(rows[0][2])
    assert features > 40 and int(rows[1][2]) == features  # several windows per paragraph, the same count
    assert f"records identical to the original's: True ({features} records)" in result.stdout
    assert re.search(r"prediction \(L=1 H=32 A=2 I=64, seq 64, batch 4.*: [\d.]+ features/s", result.stdout)
