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


PROFILE_ROWS = ["forward products", "forward other", "backward products", "backward other", "embeddings' gradient",
                "gradient clipping", "optimizer update", "all ops", "step (wall)", "step (profiled)"]


def profile_table(out, sides=("bert_tf", "pytorch")):
    """{row: [ms per step of each side]} of a bench's --profile table (bench/step_profile.py), after
    checking its layout: its header, every row in order, each category above 0 on every side (a
    phase or an op put in the wrong category leaves one at 0: bench/step_profile.py's unit tests
    check the sorting itself) and "all ops" their sum."""
    assert re.search(r"^  ms per step +" + " +".join(sides) + "$", out, re.M), out
    number_columns = " +".join([r"[\d.]+"] * len(sides))
    rows = dict(re.findall(rf"^  (\S.*?) {{2,}}({number_columns})$", out, re.M))
    assert list(rows) == PROFILE_ROWS, out
    values = {name: [float(x) for x in row.split()] for name, row in rows.items()}
    for name in PROFILE_ROWS:
        assert all(value > 0 for value in values[name]), (name, out)
    for side in range(len(sides)):
        assert abs(sum(values[name][side] for name in PROFILE_ROWS[:7]) - values["all ops"][side]) < 0.05, out
    # Each side's largest other ops: named, in falling order, together no more than its other ops.
    for side, name in enumerate(sides):
        found = re.search(rf"^  {name}'s other ops, the largest \(ms per step\): (.+)$", out, re.M)
        assert found, out
        ops = [(op, float(ms)) for op, ms in re.findall(r"(\S+) ([\d.]+)(?:, |$)", found[1])]
        assert ops and [ms for _, ms in ops] == sorted((ms for _, ms in ops), reverse=True), found[1]
        assert sum(ms for _, ms in ops) <= values["forward other"][side] + values["backward other"][side] + 0.05
    return values
