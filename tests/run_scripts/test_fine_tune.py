"""Fine-tuning from Python: docs/library.md's snippet, run as written (its paths and sizes made tiny),
writes the files that run_classifier.py writes for the same settings, byte for byte; a search from
Python chooses its run; a bad setting is a SettingError naming the field."""

import os
import re

import pytest

from bert_tf import kernels
from tests import warm_scripts
from tests.run_scripts.conftest import REPO, run_script
from tests.run_scripts.test_run_classifier import write_mrpc

pytestmark = pytest.mark.slow

# The snippet's values -> the test's: each must occur in the snippet once, so that a changed
# snippet fails here rather than running something else.
SMALLER = {
    'max_seq_length=128': "max_seq_length=24",
    'train_batch_size=32': "train_batch_size=16",
    'learning_rate=2e-5': "learning_rate=3e-3",
    'num_train_epochs=3.0': "num_train_epochs=2.0",
    'learning_rate=(5e-5, 3e-5, 2e-5)': "learning_rate=(3e-3, 1e-3)",
}
# The files a run writes that do not name its folder.
SAME_FILES = ("eval_results.txt", "test_results.tsv", "MRPC.tsv", "fine_tuning_task.json", "training_settings.json")


def _snippet():
    with open(os.path.join(REPO, "docs", "library.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## Fine-tuning from Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _training_env():
    """The oneDNN setting the script chooses for training, given to both runs: the Python process
    would otherwise keep TensorFlow's default, whose float results differ in the last bits."""
    env = {}
    kernels.apply(kernels.choose("training", {}), env)
    return {kernels.VARIABLE: env.get(kernels.VARIABLE, kernels.setting({}))}


def test_the_docs_snippet_writes_the_scripts_files_and_searches(tmp_path, google_model_dir):
    data = tmp_path / "MRPC"
    write_mrpc(data, n_train=48, n_dev=16, n_test=8)
    code = _snippet()
    paths = {'"uncased_L-12_H-768_A-12"': repr(str(google_model_dir.path)), '"glue_data/MRPC"': repr(str(data)),
             '"/tmp/mrpc_output"': repr(str(tmp_path / "python")), '"/tmp/mrpc_search"': repr(str(tmp_path / "search"))}
    for old, new in {**paths, **SMALLER}.items():
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    env = _training_env()
    done = warm_scripts.run(["-c", code], env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = done.stdout.splitlines()[-2:]
    (accuracy, output_dir), (chosen, results) = first.split(" ", 1), second.split(" ", 1)
    assert output_dir == str(tmp_path / "python") and 0 <= float(accuracy) <= 1
    assert chosen.startswith(str(tmp_path / "search")) and "eval_accuracy" in results
    assert (tmp_path / "search" / "best").exists()

    script = run_script("run_classifier.py", "--task_name=MRPC", f"--data_dir={data}",
                        f"--output_dir={tmp_path / 'script'}", f"--init_checkpoint={google_model_dir.prefix}",
                        "--do_train", "--do_eval", "--do_predict", "--max_seq_length=24", "--train_batch_size=16",
                        "--learning_rate=3e-3", "--num_train_epochs=2.0", env=env, timeout=600)
    assert script.returncode == 0, script.stderr[-3000:]
    for name in SAME_FILES:
        assert (tmp_path / "python" / name).read_bytes() == (tmp_path / "script" / name).read_bytes(), name


def test_a_bad_setting_is_a_setting_error_naming_the_field(tmp_path, google_model_dir):
    code = f"""
from bert_tf import fine_tune
from bert_tf.errors import SettingError
from bert_tf.tasks import classifier

for values in (dict(max_seq_length=2), dict(warmup_proportion=1.5, max_seq_length=16), dict(max_seq_length="16")):
    try:
        fine_tune(classifier.Settings(task_name="MRPC", data_dir={str(tmp_path)!r}, do_train=True,
                                      output_dir={str(tmp_path / 'out')!r},
                                      init_checkpoint={google_model_dir.prefix!r}, **values))
    except SettingError as e:
        print("ERROR", e.setting, "|", e)
"""
    done = warm_scripts.run(["-c", code], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("ERROR")]
    assert lines == [
        "ERROR max_seq_length | --max_seq_length=2 leaves no room for a text: [CLS] A [SEP] needs 3 positions",
        "ERROR warmup_proportion | --warmup_proportion=1.5 must be between 0 and 1",
        "ERROR max_seq_length | max_seq_length='16' must be an integer",
    ]
    assert not (tmp_path / "out").exists()  # refused before any work
    other = warm_scripts.run(["-c", "from bert_tf import fine_tune\nfrom bert_tf.training import pretrain\n"
                              "fine_tune(pretrain.Settings(input_file='x', output_dir='y'))"], timeout=300)
    assert other.returncode == 1
    assert other.stderr.splitlines()[-1] == ("bert_tf.errors.SettingError: Settings names no task kind: give a "
                                             "task's Settings (bert_tf.tasks.classifier.Settings, ...)")
