import json
import os
import time
import types

import pytest

from tests import warm_scripts
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config, write_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def google_model_dir(tmp_path):
    """A tiny model folder laid out like Google's uncased_L-12_H-768_A-12 release."""
    d = tmp_path / "uncased_tiny"
    d.mkdir()
    config = tiny_config()
    (d / "bert_config.json").write_text(json.dumps({**config.to_dict(), "directionality": "bidi"}, indent=2))
    write_vocab(d / "vocab.txt", VOCAB)
    weights = random_weights(original_shapes(config), seed=3)
    write_tf1_checkpoint(d / "bert_model.ckpt", weights)
    return types.SimpleNamespace(path=d, config=config, weights=weights, prefix=str(d / "bert_model.ckpt"))


def run_script(name, *flags, timeout=300, env=None):
    """`python run_scripts/<name> <flags>` from the repository root: a CompletedProcess (a process
    forked from the worker's warm interpreter, see tests/warm_scripts.py)."""
    return warm_scripts.run([os.path.join(REPO, "run_scripts", name), *flags], env=env, timeout=timeout)


# Runs a script's main() for several flag sets in one process (one TensorFlow start for all),
# printing each outcome: "ok", or SystemExit's message (the script's one-line error).
_DRIVER = r"""
import contextlib, importlib, json, sys
sys.path.insert(0, sys.argv[1])
script, cases, mock, prelude = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5]
sys.argv[0] = script + ".py"  # what error lines start with
from absl import flags
module = importlib.import_module("run_scripts." + script)
context = contextlib.nullcontext()
if mock:
    import tensorflow_datasets as tfds
    context = tfds.testing.mock_data(num_examples=mock)
exec(prelude)  # may set `context` (e.g. a mock_data with its own examples)
outcomes = []
with context:
    for argv in cases:
        flags.FLAGS.unparse_flags()
        flags.FLAGS([script + ".py", *argv])
        try:
            module.main([])
            outcomes.append("ok")
        except SystemExit as e:
            outcomes.append(str(e))
print("OUTCOMES " + json.dumps(outcomes))
"""


def run_main_cases(script, cases, mock=0, prelude="", timeout=600):
    """Runs `run_scripts/<script>.py`'s main() once per flag list in `cases`, all in one
    subprocess; returns each outcome ("ok" or the error line). `mock`: TFDS mock_data's
    num_examples; `prelude`: Python run first in the driver (it may set `context`)."""
    argv = [script, json.dumps([[str(a) for a in c] for c in cases]), json.dumps(mock), prelude]
    result = warm_scripts.run(["-c", _DRIVER, REPO, *argv], timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [x for x in result.stdout.splitlines() if x.startswith("OUTCOMES ")][-1]
    return json.loads(line[len("OUTCOMES "):])


def served_export(export_type, run_dir, export_dir, *flags):
    """`export_saved_model.py` of the run in `run_dir`, as a user runs it, and the export's loaded
    `serving_default` (tensorflow_text imported first, for its ops)."""
    result = run_script("export_saved_model.py", f"--export_type={export_type}", f"--init_checkpoint={run_dir}",
                        f"--export_dir={export_dir}", *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - its ops

    return tf.saved_model.load(str(export_dir)).signatures["serving_default"]


def killed_and_rerun(script, flags, output_dir, timeout=300, marker="checkpoint"):
    """Runs `script` with `flags`, kill -9s it as soon as `marker` is in `output_dir` (by default
    its first checkpoint), then runs the same command again to the end; returns that second run."""
    process = warm_scripts.start([os.path.join(REPO, "run_scripts", script), *[str(f) for f in flags]])
    try:
        deadline = time.time() + timeout
        while not os.path.exists(os.path.join(output_dir, marker)):
            assert process.poll() is None, process.read("stderr")[-2000:]
            assert time.time() < deadline
            time.sleep(0.02)
        process.kill()
        process.wait()
    finally:
        process.close()
    again = run_script(script, *[str(f) for f in flags], timeout=timeout)
    assert again.returncode == 0, again.stderr[-3000:]
    return again


def converted_to_original(run_dir, prefix):
    """convert_checkpoint.py --direction=to_original on a run's folder; returns the written
    checkpoint's variable shapes."""
    import tensorflow as tf

    result = run_script(
        "convert_checkpoint.py", "--direction=to_original", f"--checkpoint_to_convert={run_dir}",
        f"--converted_checkpoint_path={prefix}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(tf.train.list_variables(str(prefix)))
