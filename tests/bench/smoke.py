"""Runs a bench script in its smoke mode as a user starts it: from the repository root, without
PYTHONPATH (each bench finds this checkout's bert_tf itself)."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def finished_bench(script, *flags, env=None, timeout=300):
    """The finished `python bench/<script> <flags>` (a CompletedProcess: exit status, stdout, stderr)."""
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, os.path.join("bench", script), *flags], cwd=REPO,
                          env={**base, "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)


def run_bench(script, *flags, env=None, timeout=300):
    """The stdout of `python bench/<script> <flags>`; fails the test with its output's end if it fails."""
    result = finished_bench(script, *flags, env=env, timeout=timeout)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


def number(pattern, text):
    """The float of the first group of `pattern` in `text` (multi-line); fails if it is absent."""
    found = re.search(pattern, text, re.M)
    assert found, f"{pattern!r} not in:\n{text}"
    return float(found.group(1).replace(",", ""))
