import gc
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# jit_compile's measured choice (bert_tf.training.speed) is read from a file that does not exist, so
# that no test, nor any script a test starts, depends on a measurement saved in the user's home.
os.environ["BERT_TF_SPEED_FILE"] = os.path.join(tempfile.gettempdir(), f"bert_tf-tests-{os.getpid()}", "none.json")

# First, TensorFlow without its start-up lines (run_scripts' filter): a test worker still importing it
# when the run ends would otherwise write them after pytest's closing line.
import run_scripts  # noqa: E402, F401

# isort: split
import keras  # noqa: E402
import pytest  # noqa: E402

from tests import peers  # noqa: E402

_PREFETCH = pytest.StashKey()


@pytest.fixture(autouse=True)
def _float32_policy_and_seed():
    """Every test starts from float32 and a fixed seed, and cannot leak a policy to the next."""
    keras.mixed_precision.set_global_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: xdist defines it
def pytest_xdist_auto_num_workers(config):
    """`-n auto` (setup.cfg's): one worker more than the cores this process may use, as measured on 2
    cores: the whole suite took 18.3 min in two runs with three workers, 20.0 min with two and
    21.5 min with four (docs/performance.md). xdist's PYTEST_XDIST_AUTO_NUM_WORKERS still wins when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


def pytest_collection_modifyitems(session, config, items):
    """Files with slow tests first (each runs whole on one worker, `--dist loadfile`): the long
    ones start early and the short ones fill the end, so that no worker waits long at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: the order within a group stays


def pytest_collection_finish(session):
    """What collection imported (TensorFlow, Keras, the package, the test modules) lives as long as
    the worker: frozen, the collector's full passes skip it (each pass over it costs about 0.2 s)."""
    gc.freeze()


def pytest_sessionstart(session):
    """A run of the whole suite (no file, test or -m given) starts installing the peers at once."""
    config = session.config
    whole_suite = config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr
    if whole_suite and not hasattr(config, "workerinput"):  # the controller, not each xdist worker
        config.stash[_PREFETCH] = peers.prefetch(config)


def pytest_sessionfinish(session):
    """An installation still running when the run ends is stopped (the next run starts it again)."""
    process = session.config.stash.get(_PREFETCH, None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()
