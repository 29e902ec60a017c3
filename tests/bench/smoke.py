"""Runs a bench script in its smoke mode as a user starts it: from the repository root, without
PYTHONPATH, its own process (forked from the test worker's warm interpreter, see
tests/warm_scripts.py, unless the bench sets up Keras itself). A forked bench finds bert_tf already
imported; that a bench finds this checkout's bert_tf by itself is shown by the fresh-interpreter
run (tests/bench/test_accelerator.py)."""

import os
import re

from tests import warm_scripts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def finished_bench(script, *flags, env=None, timeout=300, real_process=False):
    """The finished `python bench/<script> <flags>` (a CompletedProcess: exit status, stdout,
    stderr). `real_process`: a fresh interpreter, for a bench that chooses Keras' backend itself."""
    env = {"PYTHONPATH": None, "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})}
    return warm_scripts.run([os.path.join("bench", script), *flags], env=env, cwd=REPO, timeout=timeout,
                            real_process=real_process)


def run_bench(script, *flags, env=None, timeout=300, real_process=False):
    """The stdout of `python bench/<script> <flags>`; fails the test with its output's end if it fails."""
    result = finished_bench(script, *flags, env=env, timeout=timeout, real_process=real_process)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return result.stdout


def number(pattern, text):
    """The float of the first group of `pattern` in `text` (multi-line); fails if it is absent."""
    found = re.search(pattern, text, re.M)
    assert found, f"{pattern!r} not in:\n{text}"
    return float(found.group(1).replace(",", ""))
