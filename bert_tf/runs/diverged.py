"""A run whose training diverged, as its folder shows it: the file a search's run leaves when its
loss or weights became NaN or Inf (`DIVERGED_FILE`), read, and the warning for a checkpoint of such
a run. Reading needs no TensorFlow, so that checkpoint conversion (below training) can warn too;
the training loop writes the file (`bert_tf.training.divergence`)."""

import os

from bert_tf.io_utils import read_json_object
from bert_tf.runs.record import run_directory

# In the folder of a search's run whose training diverged: {"step": N, "message": the loop's error}.
DIVERGED_FILE = "diverged.json"


def read_divergence(run_dir):
    """Reads the record a search's run leaves when its training diverged (`DIVERGED_FILE`).

    Args:
        run_dir: The run's folder.

    Returns:
        The record, a dict `{"step": the global step, "message": the training loop's error}`, or
        None when `run_dir` holds no `DIVERGED_FILE`.

    Raises:
        ValueError: The file cannot be read, is not JSON or holds no JSON object.
    """
    path = os.path.join(run_dir, DIVERGED_FILE)
    return read_json_object(path) if os.path.isfile(path) else None


def diverged_warning(checkpoint):
    """The warning for a checkpoint of a run whose training diverged, or None.

    Such a run's checkpoints hold finite weights from before the divergence, but the run did not
    finish, and its dev figures are not those of a trained model.

    Args:
        checkpoint: What `--init_checkpoint` may name: a run's folder, one of its ckpt-N or a
            .keras file in it (`bert_tf.runs.record.run_directory`); None or empty: no warning.

    Returns:
        One line naming the run's `DIVERGED_FILE` and the step it diverged at, when the run's
        folder holds that file; None otherwise.

    Raises:
        ValueError: The run's `DIVERGED_FILE` cannot be read (see `read_divergence`).
    """
    if not checkpoint:
        return None
    run_dir = run_directory(checkpoint)
    found = read_divergence(run_dir)
    if found is None:
        return None
    return (f"{os.path.join(run_dir, DIVERGED_FILE)}: this run diverged at step {found.get('step')} and did not "
            "finish; its last checkpoint is from before that, not a trained model")
