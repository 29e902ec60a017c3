"""Peers (tensorflow-hub, transformers, PyTorch, sentence-transformers) for the interoperability tests and the benches'
smoke runs: installed once into a folder of their own, cached in pytest's cache when there is one,
never into the test environment (they are not dependencies).

`python -m tests.peers` installs them before a run (CI's install step, so that the suite's time is
its tests'). A run of the whole suite starts their installation in the background as it begins (`prefetch`,
from tests/conftest.py), so that the tests that need them find them ready instead of waiting
for pip; a test that comes first waits on the same lock, and one that finds no finished
installation installs again and shows pip's error."""

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

TRANSFORMERS_VERSION = "5.24.0"
TORCH_VERSION = "2.13.0"  # the CPU wheel in /opt/wheels
HUB_VERSION = "0.16.1"
SENTENCE_TRANSFORMERS_VERSION = "6.2.0"

REPO = Path(__file__).resolve().parent.parent


def _peer_sets():
    """name -> (pip requirements, --no-deps, timeout in s), the smaller first."""
    from importlib.metadata import version

    major, minor = version("tensorflow").split(".")[:2]  # without importing it (seconds, and its start-up lines)
    return {
        # tensorflow-hub and the tf-keras of the installed TensorFlow.
        "tf_hub_peers": ([f"tensorflow-hub=={HUB_VERSION}", f"tf-keras=={major}.{minor}.*"], True, 600),
        "hf_peers": ([f"transformers=={TRANSFORMERS_VERSION}", f"torch=={TORCH_VERSION}"], False, 900),
        # sentence-transformers and what it needs beyond hf_peers: used with hf_peers after it on the path.
        "st_peers": ([f"sentence-transformers=={SENTENCE_TRANSFORMERS_VERSION}", "scikit-learn==1.9.1", "scipy==1.17.1",
                      "joblib==1.6.0", "threadpoolctl==3.8.0", "cloudpickle==3.1.3", "narwhals==2.29.0"], True, 600),
    }


def installed_peers(request, tmp_path_factory, name):
    """The folder holding the peer set `name` (`_peer_sets`), installed there on first use; put
    it on a subprocess's PYTHONPATH."""
    wanted, no_deps, timeout = _peer_sets()[name]
    cache = getattr(request.config, "cache", None)
    base = cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)
    return _locked_install(base, wanted, no_deps, timeout)


def _locked_install(base, wanted, no_deps, timeout):
    Path(base).mkdir(parents=True, exist_ok=True)
    target = Path(base) / "-".join(w.replace("==", "").replace(".*", "") for w in wanted)
    # Parallel test workers (pytest -n) and the prefetch wait for the one that installs instead of
    # installing twice.
    with open(Path(base) / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "installed.json").is_file():
            shutil.rmtree(target, ignore_errors=True)  # an installation cut short (a stopped prefetch)
            options = ["--no-deps"] if no_deps else []
            result = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", *options, "--target", str(target), *wanted],
                capture_output=True, text=True, timeout=timeout,
            )
            assert result.returncode == 0, result.stderr[-3000:]
            (target / "installed.json").write_text(json.dumps(wanted))
    return target


def prefetch(config):
    """Starts installing every peer set into pytest's cache in a process of its own (silent: its
    output goes nowhere) and returns it, or None without a cache."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return None
    jobs = [(str(cache.mkdir(name)), *spec) for name, spec in _peer_sets().items()]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.peers", json.dumps(jobs)], cwd=REPO, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def install_all():
    """Installs every peer set where a pytest run from the repository root finds them (its cache,
    `.pytest_cache/d/<set>`), before the suite: an install step of its own, as CI's, so that the
    suite's time is its tests' alone. Fails with pip's error."""
    for name, (wanted, no_deps, timeout) in _peer_sets().items():
        target = _locked_install(REPO / ".pytest_cache" / "d" / name, wanted, no_deps, timeout)
        print(f"{name}: {target}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 1:  # python -m tests.peers
        install_all()
        sys.exit(0)
    for base, wanted, no_deps, timeout in json.loads(sys.argv[1]):
        try:
            _locked_install(base, wanted, no_deps, timeout)
        except (AssertionError, OSError, subprocess.SubprocessError):
            pass  # the test that needs this set installs it again and shows pip's error
