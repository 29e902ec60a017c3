"""run_scripts/__init__.py: TensorFlow's start-up log lines are hidden in every script unless
TF_CPP_MIN_LOG_LEVEL asks for them."""

import ast
import glob
import os
import re
import subprocess
import sys

import pytest

import run_scripts
from tests.run_scripts.conftest import REPO

# A stderr as TensorFlow writes it while loading, with our own lines among its lines.
STDERR = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795576657.240854    4652 port.cc:153] oneDNN custom operations are on.
I0000 00:00:1795576657.259040    4652 cpu_feature_guard.cc:227] This TensorFlow binary is optimized.
To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.
W0000 00:00:1795576657.300000    4652 gpu_device.cc:2344] Cannot dlopen some GPU libraries.
2025-09-17 14:44:05.157831: I external/local_xla/xla/tsl/cuda/cudart_stub.cc:32] Could not find cuda drivers.
2025-09-17 14:44:05.176998: E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:467] Unable to register cuFFT.
E0000 00:00:1795576662.341666    4814 cuda_platform.cc:52] failed call to cuInit
F0000 00:00:1795576662.400000    4814 main.cc:1] fatal
I1125 03:19:24.702374 139631716707200 run_classifier.py:81] Task sst-2 (single, 2 labels)
W1125 03:19:24.702374 139631716707200 common_flags.py:30] --bert_config_file: unknown key
/work/bert_tf/config.py:12: UserWarning: ours
To enable the following instructions: (a line of ours that only looks like TensorFlow's)
"""
OURS = [
    "I1125 03:19:24.702374 139631716707200 run_classifier.py:81] Task sst-2 (single, 2 labels)\n",
    "W1125 03:19:24.702374 139631716707200 common_flags.py:30] --bert_config_file: unknown key\n",
    "/work/bert_tf/config.py:12: UserWarning: ours\n",
    "To enable the following instructions: (a line of ours that only looks like TensorFlow's)\n",
]
FATAL = "F0000 00:00:1795576662.400000    4814 main.cc:1] fatal\n"


def _lines(*numbers):
    lines = STDERR.splitlines(keepends=True)
    return [lines[n] for n in numbers]


@pytest.mark.parametrize(
    "level, kept",
    [
        (0, STDERR.splitlines(keepends=True)),
        # 1: no INFO (the cpu_feature_guard line goes with its second line), no absl preamble.
        (1, _lines(4, 6, 7, 8) + OURS),
        (2, _lines(6, 7, 8) + OURS),
        (3, [FATAL] + OURS),
        (4, [FATAL] + OURS),  # a FATAL line says why the process stops: always kept
    ],
)
def test_hide_startup_lines_keeps_what_the_level_shows_and_every_line_of_ours(level, kept):
    assert run_scripts.hide_startup_lines(STDERR, level) == "".join(kept)


@pytest.mark.parametrize("value, level", [("0", 0), ("2", 2), ("3", 3), ("x", 0), ("", 0), (None, 0)])
def test_min_log_level_reads_the_variable_as_tensorflow_does(monkeypatch, value, level):
    if value is None:
        monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    else:
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", value)
    assert run_scripts.min_log_level() == level


OUR_PACKAGES = ("bert_tf", "run_scripts")


def _scripts():
    paths = sorted(glob.glob(os.path.join(REPO, "run_scripts", "*.py")))
    shared = {"__init__.py", *(f"{name}.py" for name in run_scripts.SHARED_MODULES)}
    return [p for p in paths if os.path.basename(p) not in shared]


def test_every_script_imports_run_scripts_before_anything_of_ours():
    """bert_tf imports TensorFlow: `import run_scripts` must come first (isort keeps a plain
    `import` before the `from ... import`s of its section)."""
    assert len(_scripts()) >= 12
    for path in _scripts():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        ours = [
            node for node in tree.body
            if (isinstance(node, ast.Import) and any(a.name.split(".")[0] in OUR_PACKAGES for a in node.names))
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in OUR_PACKAGES)
        ]
        first = ours[0]
        assert isinstance(first, ast.Import) and [a.name for a in first.names] == ["run_scripts"], path


# TensorFlow's C++ log lines, its oneDNN and CUDA notices and absl's preamble.
_STARTUP = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w./-]+\.cc:\d+\] |absl::InitializeLog|oneDNN|cuda drivers", re.M)


@pytest.mark.slow
def test_a_script_shows_tensorflows_startup_lines_only_when_the_variable_asks(tmp_path):
    """A real run with a spawned worker process (which imports the script again)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    command = [
        sys.executable, os.path.join(REPO, "run_scripts", "create_pretraining_data.py"),
        f"--input_file={os.path.join(REPO, 'data', 'corpus.txt')}", f"--output_file={tmp_path / 'out.tfrecord'}",
        f"--vocab_file={os.path.join(REPO, 'data', 'vocab.txt')}", "--dupe_factor=1", "--num_workers=2",
        "--noprogress",
    ]
    runs = {}
    for level in (None, "0"):
        run_env = env if level is None else {**env, "TF_CPP_MIN_LOG_LEVEL": level}
        runs[level] = subprocess.run(command, capture_output=True, text=True, env=run_env, cwd=REPO, timeout=300)
        assert runs[level].returncode == 0, runs[level].stderr[-3000:]
        assert "Instances: " in runs[level].stderr  # our own log lines stay
    assert not _STARTUP.search(runs[None].stderr), runs[None].stderr
    assert _STARTUP.search(runs["0"].stderr), runs["0"].stderr
