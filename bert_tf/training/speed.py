"""Speed settings that follow the machine at hand, not a constant (TensorFlow).

Two XLA settings left unset ("auto") resolve here, each on a measurement of its own:

- `jit_compile`, the training step's (`choose_jit_compile`): on GPU and TPU XLA is on (it fuses
  the bias, GELU, LayerNorm and dropout around the matmuls, and a TPU runs nothing else). On CPU
  the answer differs between machines (the issue's reporter found XLA faster on an AVX2-only CPU;
  a 2-core AMD EPYC with AVX-512 ran the fine-tuning step at 0.60-0.64x with it, batches cut to
  their longest row), so `python bench/finetuning.py --save_defaults` measures XLA on and off for
  the fine-tuning step at the default flags and saves its choice.
- `serving_jit_compile`, a text-in export's serving function where the format of its weights
  leaves XLA to the machine (float32; `bert_tf.export.serving.choose_serving_jit_compile` holds
  the rule and each format's own default): on a GPU on (the exporting machine's platform
  decides), on CPU the choice of `python bench/serving.py --save_defaults`, which serves the same
  export with XLA and without (on the EPYC above XLA first lost, 71 against 58 ms at batch 1, and
  later won: 44 against 45 ms, and 45.7 against 35.5 sequences/s at batch 32).

The measured choices live in one per-machine file (`$BERT_TF_SPEED_FILE`, default
~/.cache/bert_tf/speed_defaults.json) beside the machine's signature (`machine_signature`):
`{"signature": {...}, "choices": {name: {"value": true, "xla_speedup": 1.3, ..., "measured_by":
"python bench/... --save_defaults"}}}`. Saving one choice keeps the others saved for the same
signature; a file of another signature is replaced. A file of the first version (one choice at the
top level: `signature`, `jit_compile`, `xla_speedup`, `measured_by`) reads as its `jit_compile`
choice. A choice is used where the signature matches this machine; elsewhere, or without the file,
the built-in JIT_COMPILE_BY_PLATFORM (CPU: off, as first measured above). A value given explicitly
always wins.
"""

import collections
import json

import tensorflow as tf

from bert_tf import kernels
from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write

PLATFORMS = ("cpu", "gpu", "tpu")
# XLA by platform when a setting is not given and no measurement of this machine is saved; "cpu"
# as first measured on the EPYC of the module's docstring.
JIT_COMPILE_BY_PLATFORM = {"cpu": False, "gpu": True, "tpu": True}
# Where the measured choices live (`bert_tf.kernels` reads them too, before TensorFlow loads).
SPEED_FILE_VARIABLE = kernels.SPEED_FILE_VARIABLE
DEFAULT_SPEED_FILE = kernels.DEFAULT_SPEED_FILE
# Each measured choice (a key of the speed file) and the command that measures and saves it.
MEASURED_BY = {
    "jit_compile": "python bench/finetuning.py --save_defaults",
    "serving_jit_compile": "python bench/serving.py --save_defaults",
    # oneDNN on or off per work (`bert_tf.kernels`, which reads them before TensorFlow loads).
    "onednn_training": "python bench/finetuning.py --save_defaults",
    "onednn_prediction": "python bench/finetuning.py --save_defaults",
    "onednn_serving": "python bench/serving.py --save_defaults",
}
MEASURE_COMMAND = MEASURED_BY["jit_compile"]

# The resolved value, where it came from (a phrase for the scripts' log line) and a warning (a
# saved file that could not be read) or None.
JitChoice = collections.namedtuple("JitChoice", ["value", "source", "warning"])


def current_platform(use_tpu=False):
    """"tpu" with use_tpu, else "gpu" when TensorFlow sees a GPU, else "cpu"."""
    if use_tpu:
        return "tpu"
    return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


def resolve_jit_compile(jit_compile, platform):
    """`jit_compile` as given (True / False), or None ("auto"): the platform's built-in default in
    JIT_COMPILE_BY_PLATFORM. A ValueError naming the setting for anything else."""
    if platform not in PLATFORMS:
        raise ValueError(f"platform={platform!r} is not one of {', '.join(PLATFORMS)}")
    if jit_compile is None:
        return JIT_COMPILE_BY_PLATFORM[platform]
    if not isinstance(jit_compile, bool):
        raise ValueError(f"{shown.jit_compile}={jit_compile!r} must be True, False or None (auto)")
    return jit_compile


def speed_file():
    """The per-machine file's path: $BERT_TF_SPEED_FILE, else DEFAULT_SPEED_FILE (home expanded)."""
    return kernels.speed_file()


def machine_signature(platform="cpu"):
    """What a measurement holds for: the platform, CPU model, core count and TensorFlow version
    (a new TensorFlow brings another XLA, so its choice is measured again)."""
    return kernels.machine_signature(platform, tf.__version__)


def _choices(record):
    """name -> that choice's record (`{"value": bool, ...}`) in a speed file's JSON `record`, of
    either version (module docstring); KeyError, TypeError or ValueError when it holds none."""
    if "choices" not in record:  # the first version: one choice, jit_compile, at the top level
        kept = {k: record[k] for k in ("xla_speedup", "measured_by") if k in record}
        record = {"choices": {"jit_compile": {"value": record["jit_compile"], **kept}}}
    choices = dict(record["choices"])
    for name, choice in choices.items():
        if not isinstance(choice["value"], bool):
            raise ValueError(f"{name}={choice['value']!r} is not true or false")
    return choices


def _read(path):
    """`(signature, choices)` of the speed file at `path` (`_choices`): FileNotFoundError when it is
    missing; OSError, ValueError, KeyError or TypeError when it cannot be read as saved choices."""
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    return record["signature"], _choices(record)


def save_measured(jit_compile, xla_speedup, path=None, name="jit_compile", figures=None):
    """Saves the choice `name` (one of MEASURED_BY): `jit_compile` (the choice's value) as measured
    on this machine's CPU (on / off = `xla_speedup`, XLA's or oneDNN's; `figures`, a dict of further
    numbers, beside it) to the
    speed file (`path` or `speed_file()`), keeping the other choices saved there for the same
    signature, atomically (a reader sees the old file or the new one). Returns the path."""
    if name not in MEASURED_BY:
        raise ValueError(f"name={name!r} is not one of {', '.join(MEASURED_BY)}")
    path = path or speed_file()
    signature = machine_signature("cpu")
    try:
        saved, choices = _read(path)
    except (OSError, ValueError, KeyError, TypeError):  # none yet, or unreadable: replaced
        saved, choices = None, {}
    if saved != signature:  # another machine's (or another TensorFlow's) choices hold nothing here
        choices = {}
    # The measured ratio is XLA's (on / off) for the XLA choices, oneDNN's (on / off) for the others.
    ratio = "xla_speedup" if name.endswith("jit_compile") else "onednn_speedup"
    choices[name] = {"value": bool(jit_compile), ratio: float(xla_speedup), **(figures or {}),
                     "measured_by": MEASURED_BY[name]}
    with atomic_write(path) as f:  # a killed writer's temporary is removed by the next write
        json.dump({"signature": signature, "choices": choices}, f, indent=2)
    return path


def measured_jit_compile(path=None, name="jit_compile"):
    """`(value, warning)`: the choice `name` when the file (`path` or `speed_file()`) holds one for
    this machine's signature, else None; warning: one line naming the file when it exists but
    cannot be read as saved choices, else None (a missing file, another machine's, or one without
    this choice is no fault)."""
    path = path or speed_file()
    try:
        signature, choices = _read(path)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"{path} is not a saved speed choice ({type(e).__name__}: {e}); it is ignored"
    if signature != machine_signature("cpu") or name not in choices:
        return None, None
    return choices[name]["value"], None


def choose_jit_compile(jit_compile, use_tpu=False, path=None, name="jit_compile"):
    """A JitChoice for the setting `name` (one of MEASURED_BY): `jit_compile` as given; unset, on
    CPU the measured choice saved for this machine (`measured_jit_compile`), else the platform's
    built-in default."""
    platform = current_platform(use_tpu)
    if jit_compile is not None:
        return JitChoice(resolve_jit_compile(jit_compile, platform), "given", None)
    if platform != "cpu":
        return JitChoice(resolve_jit_compile(None, platform), f"the {platform.upper()} default", None)
    path = path or speed_file()
    value, warning = measured_jit_compile(path, name)
    if value is not None:
        return JitChoice(value, f"measured on this machine ({path})", warning)
    return JitChoice(resolve_jit_compile(None, platform),
                     f"the CPU default; measure this machine with `{MEASURED_BY[name]}`", warning)


def jit_compile_for(jit_compile, use_tpu=False):
    """The value of `choose_jit_compile` on the platform this process runs on."""
    return choose_jit_compile(jit_compile, use_tpu).value


def __getattr__(name):
    """Names this module held before, as deprecated aliases (see `bert_tf._deprecated`): the serving
    function's XLA rule moved up to the export layer, beside the formats it reads."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
