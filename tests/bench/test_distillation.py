"""bench/distillation.py in its smoke size: every run's command line is printed as a script's, each
task's table has a row of figures for the teacher and every student, and the students, of half the
teacher's layers, have fewer parameters than it."""

import re

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow

RUNS = ("teacher", "labels alone", "labels alone, as many steps as with transfer text", "distilled",
        "distilled, transfer text", "labels alone, cut from the teacher", "distilled, cut from the teacher",
        "distilled, cut from the teacher, transfer text")


def test_smoke_run_trains_exports_and_serves_the_teacher_and_each_student(tmp_path):
    out = run_bench("distillation.py", "--smoke", f"--workdir={tmp_path / 'work'}", timeout=900)
    commands = [line for line in out.splitlines() if line.startswith("$ python run_scripts/")]
    for script in ("run_classifier.py", "run_sentence_embedding.py"):
        mine = [c for c in commands if script in c]
        for flags in ("--student_layers=1 --distill_alpha=1", "--student_layers=1 --transfer_file="):
            assert any(flags in c for c in mine), mine
        # Students of their own start, taught by the teacher.
        assert any("--teacher=" in c and "--student_layers" not in c and "--transfer_file=" in c for c in mine), mine
    assert sum("export_saved_model.py" in c for c in commands) == 4  # the teacher and a student: each task
    for kind, metric in (("classifier", "eval_accuracy"), ("embedder", "mrr_at_10")):
        table = out.split(f"\n{kind}: dev {metric}")[1]
        rows = {name: re.search(rf"^\| {re.escape(name)} \| ([\d.]+) \|[^|]*\| ([\d,]+) \| (\d+) \| [\d.-]+ \| "
                                rf"([\d.]+) \| ([\d.]+) \|$", table, re.M) for name in RUNS}
        assert all(rows.values()), table
        figures = {name: [float(g.replace(",", "")) for g in row.groups()] for name, row in rows.items()}
        for name, (dev, _, seconds, p50, rate) in figures.items():
            assert 0 <= dev <= 1 and seconds > 0 and p50 > 0 and rate > 0, (name, table)
        teacher_parameters = figures["teacher"][1]
        assert all(figures[name][1] < teacher_parameters for name in RUNS[1:]), table
        assert number(r"^student / teacher: ([\d.]+) of the parameters", table) < 1
        # The smoke's --cache_epochs=2: the student again, its teacher's outputs in the step and cached.
        script = {"classifier": "run_classifier.py", "embedder": "run_sentence_embedding.py"}[kind]
        assert any(script in c and "--num_train_epochs=2 --teacher_outputs=cached" in c for c in commands), commands
        cache = out.split(f"\n{kind}: the distilled student with transfer text, the teacher's outputs")[1]
        timed = re.search(r"^\| 2 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", cache, re.M)
        assert timed, cache
        step, cached, pass_seconds, ratio = (float(g) for g in timed.groups())
        # The seconds are printed to 0.1 s, the ratio to 0.01 of the unrounded ones.
        assert 0 < pass_seconds < cached and (cached - 0.05) / (step + 0.05) - 0.005 <= ratio <= (
            cached + 0.05) / (step - 0.05) + 0.005, cache
        share = re.search(r"the teacher's forward pass in a distilled step: (-?\d+)% of the step \(([\d.]+) against "
                          r"([\d.]+) ex/s with its outputs cached", cache)
        assert share, cache  # a measurement: its value at this size is noise, its arithmetic is not
        with_teacher, without = float(share.group(2)), float(share.group(3))
        assert with_teacher > 0 and without > 0 and int(share.group(1)) == round(100 * (1 - with_teacher / without))
