"""Peers (tensorflow-hub, transformers, PyTorch) for the interoperability tests: installed once
into a folder of their own, cached in pytest's cache when there is one, never into the test
environment (they are not dependencies)."""

import fcntl
import json
import subprocess
import sys


def installed_peers(request, tmp_path_factory, name, wanted, no_deps=False, timeout=600):
    """The folder holding the pip requirements `wanted` (`name` keys the cache), installed there
    on first use; put it on a subprocess's PYTHONPATH."""
    cache = getattr(request.config, "cache", None)
    base = cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)
    target = base / "-".join(w.replace("==", "").replace(".*", "") for w in wanted)
    # Parallel test workers (pytest -n) wait for the one that installs instead of installing twice.
    with open(base / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install(target, wanted, no_deps, timeout)
    return target


def _install(target, wanted, no_deps, timeout):
    if not (target / "installed.json").is_file():
        options = ["--no-deps"] if no_deps else []
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", *options, "--target", str(target), *wanted],
            capture_output=True, text=True, timeout=timeout,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        (target / "installed.json").write_text(json.dumps(wanted))
