import re

import pytest

from tests.run_scripts.script_cases import run_cases

pytestmark = pytest.mark.slow


def test_bad_flags_fail_before_any_work_and_a_failed_step_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    blocked = tmp_path / "blocked"
    (blocked / "train.tfrecord").mkdir(parents=True)  # where the first step writes its data
    cases = [
        ["--num_train_steps=0", f"--output_dir={tmp_path / 'new'}"],
        [f"--output_dir={tmp_path / 'file'}"],
        [f"--output_dir={tmp_path / 'file' / 'run'}"],
        [f"--output_dir={blocked}"],
    ]
    outcomes, _, stderr = run_cases("quickstart", cases)
    error = "quickstart.py: error: "
    assert outcomes == [
        f"{error}--num_train_steps=0 must be at least 1",
        f"{error}--output_dir={tmp_path / 'file'} is a file, not a folder",
        f"{error}--output_dir={tmp_path / 'file' / 'run'} is under {tmp_path / 'file'}, which is a file, not a folder",
        f"{error}create_pretraining_data.py failed (exit code 1); its error is above",
    ]
    assert not (tmp_path / "new").exists()
    # The step's own one-line error is shown, and no traceback from either process.
    assert re.search(r"create_pretraining_data.py: error: --output_file=.*train.tfrecord is a directory", stderr)
    assert "Traceback" not in stderr
