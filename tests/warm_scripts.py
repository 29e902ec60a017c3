"""Runs `run_scripts/` the way a user does (`python run_scripts/<name>.py --flags`: a process of its
own, its exit status, stdout and stderr, kill -9) without paying TensorFlow's import for each run.

One warm interpreter per test worker imports TensorFlow, Keras, bert_tf and the scripts' shared
modules, runs no TensorFlow op (so it holds no thread pool and no device), and forks a child per
run. The child is the script's process: it gets the run's argv, environment, working directory
and its own stdout / stderr files, runs the script as `__main__` (absl's `app.run`, flag parsing,
exit status), then the interpreter's exit handlers, and exits with the script's status. What the
child cannot reproduce goes to a real `python` process instead: an environment that changes how
TensorFlow or Keras load (another backend, another log level, oneDNN switches read at load). A
script's own oneDNN choice (`bert_tf.kernels`, made before TensorFlow loads) is its warm
interpreter's: one per setting, started with it. The start-up itself (the scripts' filtered
TensorFlow import, `--help`) keeps real-process tests of its own (tests/run_scripts/test_init.py).
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What every script run gets (the tests' defaults): TensorFlow's C++ lines at ERROR and above hidden,
# Keras on TensorFlow.
BASE_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
# Variables a forked child may take on its own: bert_tf reads them when a script runs, not TensorFlow
# or Keras when they load.
_READ_AT_RUN_TIME = ("BERT_TF_", "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS")
# Variables read while TensorFlow, XLA or Keras load: a run that changes one needs a real process.
_READ_AT_LOAD = ("TF_", "XLA_", "KERAS_", "CUDA_", "OMP_", "MKL_", "OPENBLAS_", "PYTHON", "LD_")

_SERVER = r"""
import atexit, json, os, runpy, signal, sys, traceback
sys.path.insert(0, sys.argv[1])
import run_scripts  # first: TensorFlow loads without its start-up lines
import keras, tensorflow  # noqa: F401
import bert_tf, bert_tf.training, bert_tf.export, bert_tf.checkpoints, bert_tf.tasks  # noqa: F401
from run_scripts import fine_tuning, flag_settings, settings_flags  # noqa: F401
from bert_tf.preprocessing import unicode_tables
# The tables a tokenizer builds (numpy, cached per process): once, here, before any fork.
for settings in ((True, True, True), (True, False, True), (False, True, True), (False, True, False)):
    unicode_tables.clean_map(*settings)
import gc
gc.freeze()  # what was imported lives as long as the children: their full collections skip it
requests = os.fdopen(os.dup(0), "r")
replies = os.fdopen(os.dup(1), "w")
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel; each writes its status
replies.write("READY\n")
replies.flush()


def child(request):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    requests.close()
    replies.close()
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
        os.close(out)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = list(request["argv"])
    # PYTHONPATH's folders come after the script's (or -c's) entry, before the installed packages.
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[1:1] = [p for p in extra if p not in sys.path]
    code = 0
    try:
        if argv[0] == "-c":  # python -c CODE ARGS: sys.argv is ["-c", ARGS], the working directory first on the path
            sys.argv = ["-c", *argv[2:]]
            sys.path[0] = ""
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        status = request["status"]
        with open(status + ".tmp", "w") as f:
            f.write(str(code))
        os.rename(status + ".tmp", status)
        os._exit(code)


for line in requests:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            child(request)
        finally:
            os._exit(70)
    replies.write(f"{pid}\n")
    replies.flush()
"""


class _Server:
    def __init__(self, kernels_env):
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, REPO], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **BASE_ENV, **kernels_env}, cwd=REPO,
        )
        self.lock = threading.Lock()
        assert self.process.stdout.readline().strip() == "READY", "the warm interpreter did not start"
        atexit.register(self.close)

    def start(self, request):
        with self.lock:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            return int(self.process.stdout.readline())

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


# One warm interpreter per oneDNN setting its scripts run with (`bert_tf.kernels`): TensorFlow reads
# it as it loads, so a child takes the one its parent loaded with.
_servers = {}


def _warm_server(env):
    """The warm interpreter whose TensorFlow runs oneDNN as a process started with `env` would."""
    from bert_tf import kernels

    key = kernels.setting(env)
    if key not in _servers or _servers[key].process.poll() is not None:
        _servers[key] = _Server({kernels.VARIABLE: key})
    return _servers[key]


def kernels_env(argv, env):
    """The variables a script run as `argv` with `env` sets before TensorFlow loads (its oneDNN
    choice, `run_scripts.kernels_choice`), as its real process would: {} when it keeps
    TensorFlow's default or the user's setting in `env`."""
    import run_scripts
    from bert_tf import kernels

    script = argv[0] if argv and argv[0] != "-c" else ""
    environ = dict(env)
    kernels.apply(run_scripts.kernels_choice([str(script), *[str(a) for a in argv[1:]]], environ), environ)
    return {k: environ[k] for k in (kernels.VARIABLE, kernels.CHOSEN) if k in environ and env.get(k) != environ[k]}


class _Outputs:
    """A run's stdout and stderr files in a folder of its own, readable from the start (as a pipe is)."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="script-run-")
        self.paths = {name: os.path.join(self.folder, name) for name in ("stdout", "stderr", "status")}
        for name in ("stdout", "stderr"):
            open(self.paths[name], "w").close()

    def read(self, name):
        with open(self.paths[name], encoding="utf-8", errors="surrogateescape") as f:
            return f.read()

    def close(self):
        shutil.rmtree(self.folder, ignore_errors=True)


class ForkedRun(_Outputs):
    """A script's process forked from the warm interpreter, with Popen's poll / wait / kill."""

    def __init__(self, argv, env, cwd):
        super().__init__()
        env = {**env, **kernels_env(argv, env)}
        self.pid = _warm_server(env).start({"argv": argv, "env": env, "cwd": cwd, **self.paths})
        self.returncode = None

    def _alive(self):
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        # A zombie cannot linger (the server ignores SIGCHLD); a pid reused this fast is not a worry.
        return True

    def poll(self):
        if self.returncode is None:
            if os.path.exists(self.paths["status"]):
                with open(self.paths["status"]) as f:
                    self.returncode = int(f.read())
            elif not self._alive():
                # Ended without writing its status: killed by a signal (as Popen says it: minus the signal).
                time.sleep(0.05)
                if os.path.exists(self.paths["status"]):
                    return self.poll()
                self.returncode = -signal.SIGKILL if self._killed else -1
        return self.returncode

    _killed = False

    def kill(self):
        self._killed = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.time() + timeout
        while self.poll() is None:
            if deadline is not None and time.time() > deadline:
                self.kill()
                raise subprocess.TimeoutExpired(self.paths, timeout)
            time.sleep(0.02)
        return self.returncode


def needs_real_process(env):
    """Whether `env` changes something read while TensorFlow or Keras load (a forked child
    inherits them loaded), or puts on PYTHONPATH a module of a name already imported here (the
    child would keep the one loaded)."""
    base = {**os.environ, **BASE_ENV}
    changed = {k for k in set(env) | set(base) if env.get(k) != base.get(k)}
    if "PYTHONPATH" in changed:
        changed.discard("PYTHONPATH")
        for folder in filter(None, env.get("PYTHONPATH", "").split(os.pathsep)):
            if os.path.abspath(folder) == REPO:  # on the warm interpreter's path already
                continue
            names = os.listdir(folder) if os.path.isdir(folder) else []
            if any(name.removesuffix(".py") in sys.modules for name in names):
                return True
    return any(k.startswith(_READ_AT_LOAD) and not k.startswith(_READ_AT_RUN_TIME) for k in changed)


def start(argv, env=None, cwd=REPO, real_process=False):
    """Starts `python <argv>` (argv[0] a script path, or "-c" and the code): a forked child of the
    warm interpreter where it can, a real process otherwise (or when `real_process`). `env`
    overrides this process's environment; a variable given as None is unset. Returns an object
    with Popen's poll / wait / kill / returncode / pid, and `read("stdout" | "stderr")`."""
    env = {k: v for k, v in {**os.environ, **BASE_ENV, **(env or {})}.items() if v is not None}
    if real_process or needs_real_process(env) or os.environ.get("BERT_TF_TESTS_REAL_PROCESSES"):
        return _RealRun(argv, env, cwd)
    return ForkedRun([str(a) for a in argv], env, str(cwd))


class _RealRun(_Outputs):
    def __init__(self, argv, env, cwd):
        super().__init__()
        with open(self.paths["stdout"], "w") as out, open(self.paths["stderr"], "w") as err:
            self.process = subprocess.Popen([sys.executable, *[str(a) for a in argv]], stdout=out, stderr=err,
                                            env=env, cwd=cwd)

    def poll(self):
        return self.process.poll()

    def kill(self):
        self.process.kill()

    def wait(self, timeout=None):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    @property
    def returncode(self):
        return self.process.returncode

    @property
    def pid(self):
        return self.process.pid


def run(argv, env=None, cwd=REPO, timeout=300, real_process=False):
    """subprocess.run(capture_output=True, text=True) for a script: a CompletedProcess."""
    process = start(argv, env, cwd, real_process)
    try:
        process.wait(timeout=timeout)
        return subprocess.CompletedProcess(argv, process.returncode, process.read("stdout"), process.read("stderr"))
    finally:
        process.close()
