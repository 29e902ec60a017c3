"""bench/serving_accuracy.py in its smoke size: run_classifier.py fine-tunes the tiny config
briefly, and the float32, int8 and bf16 exports of that run classify data/sentiment's 40 dev
sentences; int8 and bf16 may move a probability, never by much."""


import pytest

from tests.bench.smoke import finished_bench, number, run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_compares_the_float_int8_and_bf16_exports():
    out = run_bench("serving_accuracy.py", "--smoke", "--smoke_epochs=1")
    accuracies = {}
    for name in ("float32", "int8", "bf16"):
        accuracies[name] = number(rf"^  {name} +dev accuracy ([\d.]+) \((\d+) of 40\)$", out)
        correct = number(rf"^  {name} +dev accuracy [\d.]+ \((\d+) of 40\)$", out)
        assert accuracies[name] == pytest.approx(correct / 40, abs=1e-4)
    for name in ("int8", "bf16"):
        changed = number(rf"^  {name} against float32: (\d+) predictions differ", out)
        largest = number(rf"^  {name} against float32: .*probabilities differ by ([\d.e+-]+) at most", out)
        assert 0 < largest < 0.02, (name, largest)  # a precision change: not the float32 export again
        # Each changed prediction moves the accuracy by at most one sentence.
        assert abs(accuracies[name] - accuracies["float32"]) * 40 <= changed + 1e-6
    # A text in a request of its own and in a batch: float32 agrees to its rounding, int8 and bf16 may not.
    alone = {name: number(rf"^  {name} alone against in a batch of 40: probabilities differ by ([\d.e+-]+) at most",
                          out) for name in ("float32", "int8", "bf16")}
    assert alone["float32"] < 1e-5 and max(alone["int8"], alone["bf16"]) < 0.02, alone


@pytest.mark.parametrize("flags, message", [
    ([], "--run (a run_classifier.py output_dir) is required, unless --smoke (not both)"),
    (["--run=/nonexistent/run"], "--run=/nonexistent/run: no such folder"),
    (["--run=.", "--tsv=/nonexistent/dev.tsv"], "--tsv: [Errno 2] No such file or directory"),
])
def test_bad_flags_fail_in_one_line_naming_the_flag(flags, message):
    result = finished_bench("serving_accuracy.py", *flags, timeout=120)
    assert result.returncode != 0 and message in result.stderr, result.stderr[-2000:]
