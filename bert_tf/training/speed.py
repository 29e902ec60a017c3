"""Speed settings that follow the machine at hand, not a constant (TensorFlow).

`jit_compile` (XLA) left unset ("auto") resolves here: on GPU and TPU XLA is on (it fuses the
bias, GELU, LayerNorm and dropout around the matmuls, and a TPU runs nothing else). On CPU the
answer differs between machines (the issue's reporter found XLA faster on an AVX2-only CPU; a
2-core AMD EPYC with AVX-512 ran the fine-tuning step at 0.60-0.64x with it, batches cut to their
longest row), so `python bench/finetuning.py --save_defaults` measures XLA on and off for the
fine-tuning step at the default flags and saves its choice in a per-machine file
(`$BERT_TF_SPEED_FILE`, default ~/.cache/bert_tf/speed_defaults.json) beside the machine's
signature (`machine_signature`). That choice is used where the signature matches this machine;
elsewhere, or without the file, the built-in JIT_COMPILE_BY_PLATFORM (CPU: off, as measured
above). A value given explicitly always wins.
"""

import collections
import json
import os
import platform as platform_module
import tempfile

import tensorflow as tf

PLATFORMS = ("cpu", "gpu", "tpu")
# XLA by platform when jit_compile is not given and no measurement of this machine is saved;
# "cpu" as measured on the EPYC of the module's docstring.
JIT_COMPILE_BY_PLATFORM = {"cpu": False, "gpu": True, "tpu": True}
SPEED_FILE_VARIABLE = "BERT_TF_SPEED_FILE"
DEFAULT_SPEED_FILE = os.path.join("~", ".cache", "bert_tf", "speed_defaults.json")
MEASURE_COMMAND = "python bench/finetuning.py --save_defaults"

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
        raise ValueError(f"jit_compile={jit_compile!r} must be True, False or None (auto)")
    return jit_compile


def speed_file():
    """The per-machine file's path: $BERT_TF_SPEED_FILE, else DEFAULT_SPEED_FILE (home expanded)."""
    return os.path.expanduser(os.environ.get(SPEED_FILE_VARIABLE) or DEFAULT_SPEED_FILE)


def cpu_model():
    """The CPU's model name as the OS reports it (Linux: /proc/cpuinfo), else Python's guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform_module.processor() or platform_module.machine()


def machine_signature(platform="cpu"):
    """What a measurement holds for: the platform, CPU model, core count and TensorFlow version
    (a new TensorFlow brings another XLA, so its choice is measured again)."""
    return {"platform": platform, "cpu": cpu_model(), "cores": os.cpu_count(), "tensorflow": tf.__version__}


def save_measured(jit_compile, xla_speedup, path=None):
    """Writes `jit_compile` (measured: XLA on / off = `xla_speedup`) for this machine's CPU to the
    speed file (`path` or `speed_file()`), atomically (a reader sees the old file or the new one),
    and returns the path."""
    path = path or speed_file()
    record = {"signature": machine_signature("cpu"), "jit_compile": bool(jit_compile),
              "xla_speedup": float(xla_speedup), "measured_by": MEASURE_COMMAND}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".speed_defaults.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path


def measured_jit_compile(path=None):
    """`(value, warning)`: the saved choice when the file (`path` or `speed_file()`) holds one for
    this machine's signature, else None; warning: one line naming the file when it exists but
    cannot be read as a saved choice, else None (a missing file or another machine's is no fault)."""
    path = path or speed_file()
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        value, signature = record["jit_compile"], record["signature"]
        if not isinstance(value, bool):
            raise ValueError(f"jit_compile={value!r} is not true or false")
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, f"{path} is not a saved speed choice ({type(e).__name__}: {e}); it is ignored"
    return (value if signature == machine_signature("cpu") else None), None


def choose_jit_compile(jit_compile, use_tpu=False, path=None):
    """A JitChoice: `jit_compile` as given; unset, on CPU the measured choice saved for this
    machine (`measured_jit_compile`), else the platform's built-in default."""
    platform = current_platform(use_tpu)
    if jit_compile is not None:
        return JitChoice(resolve_jit_compile(jit_compile, platform), "given", None)
    if platform != "cpu":
        return JitChoice(resolve_jit_compile(None, platform), f"the {platform.upper()} default", None)
    path = path or speed_file()
    value, warning = measured_jit_compile(path)
    if value is not None:
        return JitChoice(value, f"measured on this machine ({path})", warning)
    return JitChoice(resolve_jit_compile(None, platform),
                     f"the CPU default; measure this machine with `{MEASURE_COMMAND}`", warning)


def jit_compile_for(jit_compile, use_tpu=False):
    """The value of `choose_jit_compile` on the platform this process runs on."""
    return choose_jit_compile(jit_compile, use_tpu).value
