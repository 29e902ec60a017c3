"""bench/serving.py in its smoke size, run from the repository root as its docstring says: our
exports at fixed length, at the request's length with XLA, and with int8 weights, each timed in a
process of its own started with this run's flags, each agreeing with the fixed-length export; the
peers skipped with a message (none installed here)."""

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.slow


def test_smoke_run_times_every_export_and_skips_missing_peers():
    # As a user starts it: no PYTHONPATH, the bench finds this checkout's bert_tf itself (in its side's process too).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, os.path.join("bench", "serving.py"), "--smoke", "--intra_op_threads=1"],
                            cwd=REPO, env={**env, "TF_CPP_MIN_LOG_LEVEL": "3"}, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    out = result.stdout
    assert "tiny: L=2 H=32 A=2 I=64, vocab 30522, seq_length 32, length_bucket 16" in out
    # Our side's own process reports the thread count it was given: the flags reach it.
    assert re.search(r"^  ours: TensorFlow \S+, threads intra 1 inter 0$", out, re.M), out
    assert out.index("exported fixed") < out.index("exported dynamic+xla") < out.index("exported int8")
    number = r"\d+\.\d"
    for name, agrees in (("fixed", True), ("dynamic\\+xla", True), ("int8", False), ("tokenize\\+pack", None)):
        row = re.search(rf"^  {name} +({number}) +({number}) +({number}) *(\S*)$", out, re.M)
        assert row, (name, out)
        if agrees is not None:  # probabilities against the fixed export: equal, or int8's rounding
            difference = float(row.group(4))
            assert difference < 1e-5 if agrees else difference < 1e-2, (name, difference)
    assert not re.search(r"^  dynamic ", out, re.M), "--smoke's export list reached the side: dynamic is not in it"
    assert "peers skipped" in out or "onnxruntime fp32" in out
