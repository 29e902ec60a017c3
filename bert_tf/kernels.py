"""Which of TensorFlow's CPU kernels run: oneDNN's or Eigen's, chosen before TensorFlow starts.

TensorFlow reads `TF_ENABLE_ONEDNN_OPTS` once, when it loads, and turns oneDNN on by itself only on
CPUs with AVX-512. Which is faster depends on the machine and on the work, so the scripts choose
per work (`WORKS`) before they import TensorFlow (`run_scripts/__init__.py`).

The scripts read their work and output folder from their command line (`run_scripts`); this
module takes them as values. In order:

1. `TF_ENABLE_ONEDNN_OPTS` set by the user always wins;
2. a script that resumes a training run takes the setting the run was trained with (its
   `training_settings.json`): other kernels round otherwise, and the resume would not be exact;
3. else this machine's measurement, where `python bench/finetuning.py --save_defaults` (training,
   prediction) or `python bench/serving.py --save_defaults` (serving) saved one (the speed file of
   `bert_tf.training.speed`, for this CPU, core count and TensorFlow);
4. else `RULE`, by the kind of CPU (`cpu_kind`: AVX-512, or AVX2 without it), as measured on both
   kinds (docs/speed.md); on other CPUs TensorFlow's own default.

This module imports no TensorFlow: it must run before TensorFlow loads.
"""

import collections
import json
import os
import platform
from importlib import metadata

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
# Set beside VARIABLE by `apply`: the value it set and why, so that a process started from a script
# (which inherits both) chooses anew for its own work instead of taking ours as the user's.
CHOSEN = "BERT_TF_ONEDNN_CHOICE"
WORKS = ("training", "prediction", "serving")
# The built-in choice by CPU kind and work (True: oneDNN on). Measured with bench/finetuning.py
# (training: the fine-tuning step) and bench/serving.py (serving: a text-in BERT-Base export):
# - AVX-512 (a 2-core AMD EPYC): training 2.53x PyTorch's examples/s with oneDNN, 0.96x without;
#   serving 24.0 against 27.4 ms at batch 1 and 104.8 against 82.3 sequences/s at batch 32;
#   prediction (batch 8) of BERT-Base's shape 49.4 against 43.0 examples/s (a 4-layer, hidden-256
#   model predicted faster without: the saved measurement decides where one is taken).
# - AVX2 without AVX-512 (a 2-core AMD EPYC): training 64.0 against 29.0 examples/s; serving 106
#   against 114 ms at batch 1 but 8.6 against 11.4 sequences/s at batch 32: off loses 7% at batch
#   1 where on loses 25% at batch 32, so off. Prediction runs batches, as serving's batch 32.
RULE = {
    "avx512": {"training": True, "prediction": True, "serving": True},
    "avx2": {"training": True, "prediction": False, "serving": False},
}
# The speed file's key of each work's measured choice.
SAVED_NAMES = {work: f"onednn_{work}" for work in WORKS}

Choice = collections.namedtuple("Choice", ["value", "source"])  # value: True, False or None (TensorFlow's own)


def cpu_features(path="/proc/cpuinfo"):
    """The CPU's features as the OS lists them (Linux: its "flags" line); an empty set elsewhere."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_kind(features=None):
    """"avx512" (AVX-512 F), "avx2" (AVX2 without AVX-512) or "other", from `features` (default:
    this machine's)."""
    features = cpu_features() if features is None else features
    if "avx512f" in features:
        return "avx512"
    return "avx2" if "avx2" in features else "other"


def tensorflow_default(kind=None):
    """Whether TensorFlow turns oneDNN on by itself on a CPU of `kind` (default: this one's): from AVX-512 up."""
    return (kind or cpu_kind()) == "avx512"


def parse(value):
    """TF_ENABLE_ONEDNN_OPTS as TensorFlow reads it: "1" or "true" on, "0" or "false" off (any
    case); None for anything else (TensorFlow then keeps its own default)."""
    text = str(value).strip().lower()
    return True if text in ("1", "true") else False if text in ("0", "false") else None


def effective(environ=None):
    """Whether oneDNN runs in a TensorFlow started with `environ` (default: this process's)."""
    environ = os.environ if environ is None else environ
    given = parse(environ.get(VARIABLE, ""))
    return tensorflow_default() if given is None else given


# The per-machine file of measured speed choices (`bert_tf.training.speed` writes it) and the
# variable that moves it.
SPEED_FILE_VARIABLE = "BERT_TF_SPEED_FILE"
DEFAULT_SPEED_FILE = os.path.join("~", ".cache", "bert_tf", "speed_defaults.json")


def speed_file(environ=None):
    """The speed file's path: $BERT_TF_SPEED_FILE of `environ` (default: this process's), else
    DEFAULT_SPEED_FILE (home expanded)."""
    environ = os.environ if environ is None else environ
    return os.path.expanduser(environ.get(SPEED_FILE_VARIABLE) or DEFAULT_SPEED_FILE)


def cpu_model():
    """The CPU's model name as the OS reports it (Linux: /proc/cpuinfo), else Python's guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_signature(platform_name="cpu", tensorflow_version=None):
    """What a speed measurement holds for: the platform, CPU model, core count and TensorFlow
    version (`tensorflow_version`, default: the installed package's, read without importing it)."""
    if tensorflow_version is None:
        try:
            tensorflow_version = metadata.version("tensorflow")
        except metadata.PackageNotFoundError:
            tensorflow_version = None
    return {"platform": platform_name, "cpu": cpu_model(), "cores": os.cpu_count(), "tensorflow": tensorflow_version}


def measured(work, path):
    """The choice for `work` saved in the speed file at `path` for this machine, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        if record["signature"] != machine_signature():
            return None
        value = record["choices"][SAVED_NAMES[work]]["value"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, bool) else None


def choose(work, environ=None, resumed=None):
    """The Choice for `work` (one of WORKS; None: no choice, TensorFlow's own) in a process started
    with `environ` (default: this one's), following the module's order; `resumed`: the setting of
    the training run this process resumes ("1" / "0"), or None."""
    environ = os.environ if environ is None else environ
    given = environ.get(VARIABLE)
    ours = environ.get(CHOSEN, "").split(":", 1)[0]
    if given is not None and given != ours:  # the user's (not one an earlier script set for its own work)
        return Choice(parse(given), f"{VARIABLE}={given} in the environment")
    if resumed is not None:
        return Choice(parse(resumed), "the setting of the run it resumes")
    if work is None:
        return Choice(None, "TensorFlow's default")
    path = speed_file(environ)
    value = measured(work, path)
    if value is not None:
        return Choice(value, f"measured for {work} on this machine ({path})")
    kind = cpu_kind()
    if kind in RULE:
        return Choice(RULE[kind][work], f"the rule for {work} on {'AVX-512' if kind == 'avx512' else 'AVX2'} CPUs")
    return Choice(None, "TensorFlow's default")


def apply(choice, environ=None):
    """Sets VARIABLE (and CHOSEN) in `environ` (default: this process's) to `choice`'s value, unless
    it is the user's or None. Call it before TensorFlow loads."""
    environ = os.environ if environ is None else environ
    if choice.value is None or choice.source.startswith(f"{VARIABLE}="):
        return choice
    value = "1" if choice.value else "0"
    environ[VARIABLE] = value
    environ[CHOSEN] = f"{value}:{choice.source}"
    return choice


def describe(environ=None):
    """One phrase for the scripts' log line: oneDNN on or off in this process, and why."""
    environ = os.environ if environ is None else environ
    on = "on" if effective(environ) else "off"
    chosen = environ.get(CHOSEN, "")
    value, _, why = chosen.partition(":")
    if chosen and value == environ.get(VARIABLE):
        return f"oneDNN {on}: {why}"
    if VARIABLE in environ:
        return f"oneDNN {on}: {VARIABLE}={environ[VARIABLE]} in the environment"
    return f"oneDNN {on}: TensorFlow's default on this CPU"


def resumed_setting(output_dir):
    """The VARIABLE value ("1" / "0") that the training run in `output_dir` was trained with, from
    its training_settings.json, or None (no such run, or one written before it was kept)."""
    if not output_dir:
        return None
    try:
        with open(os.path.join(output_dir, "training_settings.json"), encoding="utf-8") as f:
            value = json.load(f).get(VARIABLE)
    except (OSError, ValueError, AttributeError):
        return None
    return value if value in ("0", "1") else None


def serving_advice(environ=None):
    """One line for an export's log: which VARIABLE serves a text-in export fastest here (this
    machine's measurement or the rule for its CPU kind, whatever this process runs with), and on
    each kind of CPU. An export is served by the user's own process, which chooses its kernels."""
    environ = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in (VARIABLE, CHOSEN)}
    here = choose("serving", environ)
    by_kind = ", ".join(f"{VARIABLE}={int(RULE[kind]['serving'])} on {name}"
                        for kind, name in (("avx512", "AVX-512 CPUs"), ("avx2", "AVX2 CPUs without AVX-512")))
    if here.value is None:
        return f"Serve it with {by_kind} (docs/speed.md)"
    return (f"Serve it with {VARIABLE}={int(here.value)} set before TensorFlow starts on this machine ({here.source}); "
            f"{by_kind} (docs/speed.md)")


def setting(environ=None):
    """VARIABLE's value ("1" / "0") of a process started with `environ`, as a run keeps it."""
    return "1" if effective(environ) else "0"
