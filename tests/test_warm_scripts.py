"""The tests' forked script runs (tests/warm_scripts.py) answer as a real `python` process does:
the same exit status and output for a script's error, the argv, working directory, environment
and PYTHONPATH a process gets, Popen's kill, and a real process where the environment changes
what TensorFlow reads as it loads."""

import json
import os
import signal
import time

from tests import warm_scripts

SCRIPT = os.path.join(warm_scripts.REPO, "run_scripts", "run_classifier.py")
REAL = {"BERT_TF_TESTS_REAL_PROCESSES": "1"}

_ECHO = r"""
import json, os, sys
import mine
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "value": os.environ.get("BERT_TF_ECHO"),
                  "mine": mine.__file__, "first": sys.path[0]}))
sys.exit(3)
"""


def test_a_scripts_error_is_the_same_forked_as_in_a_real_process(tmp_path):
    flags = ["--task_name=nope", "--do_train", f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'out'}",
             f"--bert_config_file={tmp_path / 'none.json'}", f"--vocab_file={tmp_path / 'vocab.txt'}"]
    forked = warm_scripts.run([SCRIPT, *flags])
    os.environ.update(REAL)
    try:
        real = warm_scripts.run([SCRIPT, *flags])
    finally:
        os.environ.pop("BERT_TF_TESTS_REAL_PROCESSES")
    assert forked.returncode == real.returncode == 1
    assert forked.stdout == real.stdout
    assert forked.stderr.strip().splitlines()[-1] == real.stderr.strip().splitlines()[-1]
    assert forked.stderr.strip().splitlines()[-1].startswith("run_classifier.py: error: ")


def test_a_forked_run_gets_its_argv_directory_environment_and_path(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mine.py").write_text("")
    env = {"BERT_TF_ECHO": "é ✓", "PYTHONPATH": str(tmp_path / "lib")}
    result = warm_scripts.run(["-c", _ECHO, "a b", "--x=1"], env=env, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    seen = json.loads(result.stdout)
    assert seen == {"argv": ["-c", "a b", "--x=1"], "cwd": str(tmp_path), "value": "é ✓",
                    "mine": str(tmp_path / "lib" / "mine.py"), "first": ""}
    assert "BERT_TF_ECHO" not in os.environ  # the test process's environment is left alone


def test_kill_ends_a_forked_run_as_popen_says_it():
    process = warm_scripts.start(["-c", "import time; print('up', flush=True); time.sleep(60)"])
    try:
        deadline = time.time() + 60
        while "up" not in process.read("stdout"):
            assert process.poll() is None and time.time() < deadline
            time.sleep(0.02)
        process.kill()
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        process.close()


def test_an_environment_read_as_tensorflow_loads_gets_a_real_process(tmp_path):
    base = {**os.environ, **warm_scripts.BASE_ENV}
    assert not warm_scripts.needs_real_process(base)
    read_by_bert_tf = {"BERT_TF_SPEED_FILE": "x", "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"}
    assert not warm_scripts.needs_real_process({**base, **read_by_bert_tf})
    other_onednn = "1" if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0" else "0"  # whatever the suite runs with
    for name, value in (("TF_CPP_MIN_LOG_LEVEL", "0"), ("KERAS_BACKEND", "jax"),
                        ("TF_ENABLE_ONEDNN_OPTS", other_onednn), ("XLA_FLAGS", "--xla_dump_to=x"),
                        ("PYTHONHASHSEED", "1")):
        assert warm_scripts.needs_real_process({**base, name: value}), name
    # A PYTHONPATH folder holding a module of a name already imported (numpy) would be shadowed only in a real process.
    (tmp_path / "numpy.py").write_text("")
    assert warm_scripts.needs_real_process({**base, "PYTHONPATH": str(tmp_path)})
    # A real process is this test process's child; a forked one is the warm interpreter's.
    parent_is_this = "import os, sys; print(os.getppid() == int(sys.argv[1]))"
    for env, real in (({"PYTHONHASHSEED": "1"}, "True"), ({}, "False")):
        result = warm_scripts.run(["-c", parent_is_this, str(os.getpid())], env=env)
        assert result.returncode == 0 and result.stdout.strip() == real, (env, result.stderr)
