"""Running a script's main() for many flag sets in one process (conftest.run_main_cases), with
the driver's output, peak memory after each case and a simulated full disk."""

import json

from tests import warm_scripts
from tests.run_scripts.conftest import _DRIVER, REPO

# Wraps main() in the driver: prints the peak RSS after each case and, for a case whose output
# file's (or folder's) name starts with "full.", lets no file grow past 30 kB (writes then fail with EFBIG, as
# they fail with ENOSPC on a full disk: the same error paths, in C++ writers too).
_PRELUDE = r"""
import os, resource, signal
_main = module.main
def _measured(argv):
    names = ("output_file", "converted_checkpoint_path", "output_dir")
    output = next((getattr(flags.FLAGS, n) for n in names if getattr(flags.FLAGS, n, None)), "")
    full = os.path.basename(str(output)).startswith("full.")
    if full:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (30000, resource.RLIM_INFINITY))
    try:
        _main(argv)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
module.main = _measured
"""


def run_cases(script, cases, timeout=600, prelude=""):
    """Each case's outcome ("ok" or the script's error line), the peak RSS in kB after each
    case, and the driver's stderr (the scripts' logs). `prelude`: Python run first in the driver
    (e.g. a handler that writes the INFO lines of the cases given --verbosity=0)."""
    argv = [script, json.dumps([[str(a) for a in c] for c in cases]), "0", _PRELUDE + prelude]
    result = warm_scripts.run(["-c", _DRIVER, REPO, *argv], timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    outcomes = json.loads([x for x in lines if x.startswith("OUTCOMES ")][-1][len("OUTCOMES "):])
    peaks = [int(x.split()[1]) for x in lines if x.startswith("MAXRSS_KB ")]
    return outcomes, peaks, result.stderr
