"""absl-flag scripts with the original release's names and flags.

Importing this package imports TensorFlow without its start-up log lines (the C++ `I0000 …` /
`W0000 …` / `E0000 …` lines: oneDNN and CUDA notices, CPU features, absl's "All log messages
before absl::InitializeLog()" line), so every script's first import of ours is `import
run_scripts`, before anything that imports TensorFlow (`bert_tf` does). TF_CPP_MIN_LOG_LEVEL
chooses what is shown, as in TensorFlow (0: everything, 1: no INFO, 2: no WARNING either, 3: no
ERROR either); it is 3 unless already set, so `TF_CPP_MIN_LOG_LEVEL=0 python run_scripts/...`
shows them all. Since TensorFlow 2.19 the lines written while it loads ignore that variable, so
its stderr is held while it loads and written back without them. Our own Python warnings and
logs are left alone.

Before TensorFlow loads, oneDNN is turned on or off for the script's work (`bert_tf.kernels`:
the user's TF_ENABLE_ONEDNN_OPTS first, then a resumed run's setting, this machine's measurement,
the rule for its kind of CPU).
"""

import os
import re
import sys
import tempfile

# The modules of this package that are not scripts: what the scripts share (flag definitions, flags ->
# settings, the fine-tuning driver).
SHARED_MODULES = ("flag_settings", "fine_tuning", "settings_flags")
LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
DEFAULT_LOG_LEVEL = "3"

_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}
# A C++ log line: absl's `I0000 00:00:1795576657.240854    4652 port.cc:153] ...` (the seconds are
# Unix time before absl is set up) or TensorFlow's older `2025-09-17 14:44:05.157831: I
# external/.../cudart_stub.cc:32] ...`. Python's absl lines have absl's shape but name a .py file:
# they are never hidden.
_CPP_LINE = re.compile(
    r"(?:(?P<absl>[IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: (?P<tsl>[IWEF]) )"
    r"[\w./+-]+\.(?:cc|cpp|c|h):\d+\] "
)
_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
# Lines that continue the message above them (cpu_feature_guard's second line).
_CONTINUATION = re.compile(r"To enable the following instructions: ")


def min_log_level():
    """TF_CPP_MIN_LOG_LEVEL as TensorFlow reads it: an integer, anything else 0."""
    value = os.environ.get(LOG_LEVEL_VARIABLE, "0")
    try:
        return int(value)
    except ValueError:
        return 0


def hide_startup_lines(text, level):
    """`text` (a TensorFlow process's stderr) without the C++ log lines below `level` (the scale of
    TF_CPP_MIN_LOG_LEVEL; FATAL lines are kept), their continuation lines and, from level 1,
    absl's preamble line."""
    kept, hiding = [], False
    for line in text.splitlines(keepends=True):
        match = _CPP_LINE.match(line)
        if match:
            # A FATAL line is always shown: it says why the process stops.
            hiding = _SEVERITY[match.group("absl") or match.group("tsl")] < min(level, _SEVERITY["F"])
        elif line.rstrip("\r\n") == _ABSL_PREAMBLE:
            hiding = level >= 1
        elif not (hiding and _CONTINUATION.match(line)):
            hiding = False
        if not hiding:
            kept.append(line)
    return "".join(kept)


def _import_tensorflow():
    """Imports TensorFlow with the lines it writes while loading filtered by hide_startup_lines."""
    os.environ.setdefault(LOG_LEVEL_VARIABLE, DEFAULT_LOG_LEVEL)  # the lines written later obey it
    level = min_log_level()
    if "tensorflow" in sys.modules or level <= 0:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)  # C++ writes to file descriptor 2, not to sys.stderr
        try:
            import tensorflow  # noqa: F401
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            text = held.read().decode("utf-8", "surrogateescape")
            kept = hide_startup_lines(text, level).encode("utf-8", "surrogateescape")
            while kept:
                kept = kept[os.write(2, kept):]


# The scripts whose work has a choice, and how to read it from their command line: a fine-tuning or
# pre-training script trains when --do_train is on, else it predicts.
_TRAINING_SCRIPTS = ("run_pretraining", "run_classifier", "run_squad", "run_ner", "run_swag", "run_sentence_embedding")
_PREDICTING_SCRIPTS = ("extract_features",)


# Flags read here that take a value, which absl also takes as the next argument (`--output_dir DIR`).
_VALUED = ("output_dir", "flagfile")


def _flag_values(argv):
    """`{name: value}` of the flags in `argv` as absl reads them (`--name=value`, `--name value` for
    the flags in _VALUED, `--name` / `--noname` for a boolean, one dash as two; a --flagfile's
    lines read in place): the last one given wins."""
    values, args = {}, list(argv)
    while args:
        arg = args.pop(0)
        if not arg.startswith("-") or arg in ("-", "--"):
            continue
        name, has_value, value = arg.lstrip("-").partition("=")
        if not has_value and name in _VALUED and args:
            has_value, value = True, args.pop(0)
        if name == "flagfile" and has_value:
            try:
                with open(os.path.expanduser(value), encoding="utf-8") as f:
                    values.update(_flag_values([line.strip() for line in f if line.strip().startswith("-")]))
            except OSError:
                pass
        elif has_value:
            values[name] = value
        else:  # a boolean: --name is true and --noname false (only one of the two names is a flag)
            values[name] = "true"
            if name.startswith("no"):
                values[name[2:]] = "false"
    return values


def script_work(argv):
    """`(work, output_dir)` of the script `argv[0]` run with `argv[1:]`: its work (None: no choice)
    and the --output_dir it trains into (None unless it trains)."""
    name = os.path.splitext(os.path.basename(argv[0] if argv else ""))[0]
    if name in _PREDICTING_SCRIPTS:
        return "prediction", None
    if name not in _TRAINING_SCRIPTS:
        return None, None
    values = _flag_values(argv[1:])
    if values.get("do_train", "false").lower() in ("1", "true"):  # as absl reads a boolean
        return "training", values.get("output_dir")
    return "prediction", None


def _kernels():
    """`bert_tf.kernels`, loaded from its file where the package is not imported yet: importing
    the package `bert_tf` would load TensorFlow."""
    import importlib.util

    if "bert_tf.kernels" not in sys.modules:
        package = importlib.util.find_spec("bert_tf")
        path = os.path.join(package.submodule_search_locations[0], "kernels.py")
        spec = importlib.util.spec_from_file_location("bert_tf.kernels", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["bert_tf.kernels"] = module
        spec.loader.exec_module(module)
    return sys.modules["bert_tf.kernels"]


def kernels_choice(argv=None, environ=None):
    """The `bert_tf.kernels.Choice` of the script run as `argv` (default: this process's) with
    `environ`: its work and the run it resumes read from its command line."""
    kernels = _kernels()
    work, output_dir = script_work(sys.argv if argv is None else argv)
    return kernels.choose(work, environ, kernels.resumed_setting(output_dir))


def _choose_kernels():
    """oneDNN on or off for this script's work (`bert_tf.kernels`), set before TensorFlow loads."""
    if "tensorflow" not in sys.modules:
        _kernels().apply(kernels_choice())


_choose_kernels()
_import_tensorflow()
