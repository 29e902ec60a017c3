"""The contract's promise, kept: a new fine-tuning task is one folder plus one registry entry.

docs/new_task.md's complete task (`wordscore`: a sentence's score, regression) is written as the
page gives it into a temporary folder outside the package, with its script (its settings as flags,
and one call). It trains,
evaluates, predicts, resumes and exports through the package's own driver, loop, checkpoints and
exports, with nothing of `bert_tf/` edited; its own record field round-trips through
fine_tuning_task.json."""

import json
import os
import re
import textwrap

import pytest

from tests import warm_scripts
from tests.run_scripts.fine_tuning_helpers import read_results, script_flags, write_model

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "very", "film", "plot", "the", "."]

# The complete task of docs/new_task.md: each ```python block after a `<!-- file: PATH -->` line.
NEW_TASK_DOC = os.path.join(REPO, "docs", "new_task.md")


def _files():
    with open(NEW_TASK_DOC, encoding="utf-8") as f:
        text = f.read()
    found = dict(re.findall(r"<!-- file: (\S+) -->\n```python\n(.*?)```", text, re.S))
    assert {"wordscore/__init__.py", "wordscore/settings.py", "wordscore/fine_tuning.py", "run_wordscore.py"} <= set(
        found), sorted(found)
    return found


def _write_task(root):
    for path, text in _files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def _write_data(directory):
    directory.mkdir()
    sentences = [("very good film .", "1.0"), ("good plot .", "0.8"), ("bad film .", "0.1"),
                 ("very bad plot .", "0.0"), ("the film .", "0.5"), ("good .", "0.9")]
    text = "".join(f"{s}\t{score}\n" for s, score in sentences * 4)
    for split in ("train", "dev", "test"):
        (directory / f"{split}.tsv").write_text(text)


def _run(root, args, code=None):
    # Only PYTHONPATH: the rest of this process's environment (warm_scripts adds it) lets the run
    # fork from the warm interpreter; another TensorFlow variable would need a real process.
    env = {"PYTHONPATH": os.pathsep.join([str(root), REPO])}
    command = ["-c", code] if code else [str(root / "run_wordscore.py"), *args]
    return warm_scripts.run(command, env=env, timeout=600)


def test_a_task_outside_the_package_runs_on_the_driver_resumes_and_exports(tmp_path):
    root = tmp_path / "elsewhere"
    _write_task(root)
    _write_data(tmp_path / "data")
    model = write_model(tmp_path / "model", VOCAB)
    out = tmp_path / "out"
    flags = script_flags(model, dict(
        data_dir=tmp_path / "data", output_dir=out, do_train=True, do_eval=True, do_predict=True,
        max_seq_length=16, train_batch_size=8, learning_rate=1e-3, num_train_epochs=2, score_scale=2.5,
    ))

    done = _run(root, flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Task wordscore; strategy" in done.stderr
    record = json.loads((out / "fine_tuning_task.json").read_text())
    assert record["kind"] == "wordscore" and record["score_scale"] == 2.5  # its own field, written flat
    assert set(read_results(out / "eval_results.txt")) >= {"eval_loss", "global_step"}
    assert len((out / "test_scores.txt").read_text().splitlines()) == 24

    step = read_results(out / "eval_results.txt")["global_step"]
    checkpoints = sorted(p.name for p in out.iterdir() if p.name.startswith("ckpt-"))
    again = _run(root, flags)  # the same command: the run is complete, nothing trained twice
    assert again.returncode == 0, again.stderr[-3000:]
    assert read_results(out / "eval_results.txt")["global_step"] == step
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("ckpt-")) == checkpoints
    other = _run(root, [*flags, "--score_scale=3"])  # its own field decides what resumes
    assert other.returncode == 1 and "score_scale" in other.stderr.splitlines()[-1], other.stderr[-2000:]
    bad = _run(root, [*flags, "--score_scale=-1"])  # the task's own check: its words, one line
    assert bad.returncode == 1
    assert bad.stderr.splitlines()[-1] == "run_wordscore.py: error: --score_scale=-1.0 must be positive"

    # Evaluating the trained run from another folder: restored through the package's checkpoints.
    evaluated = tmp_path / "evaluated"
    only_eval = script_flags(model, dict(data_dir=tmp_path / "data", output_dir=evaluated, init_checkpoint=out,
                                         do_eval=True, max_seq_length=16, score_scale=2.5))
    done = _run(root, only_eval)
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_results(evaluated / "eval_results.txt")["eval_loss"] == read_results(out / "eval_results.txt")[
        "eval_loss"]

    export_dir = tmp_path / "export"
    code = textwrap.dedent(f"""
        import wordscore
        import tensorflow as tf
        from bert_tf.export import exports
        print(exports.read("wordscore", init_checkpoint={str(out)!r}).write({str(export_dir)!r}))
        loaded = tf.saved_model.load({str(export_dir)!r})
        print(loaded.signatures["serving_default"](text_a=tf.constant(["very good film ."])))
    """)
    exported = _run(root, [], code)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "a WordScorer of task 'wordscore'" in exported.stdout
