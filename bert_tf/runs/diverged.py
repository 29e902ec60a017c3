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
    """`{"step", "message"}` of a run of a search that diverged (`DIVERGED_FILE`), or None."""
    path = os.path.join(run_dir, DIVERGED_FILE)
    return read_json_object(path) if os.path.isfile(path) else None


def diverged_warning(checkpoint):
    """A warning line when `checkpoint` (a run's folder or one of its ckpt-N) belongs to a run whose
    training diverged (its DIVERGED_FILE): its checkpoints hold finite weights from before, but the
    run did not finish, and its dev figures are not those of a trained model. None otherwise."""
    if not checkpoint:
        return None
    run_dir = run_directory(checkpoint)
    found = read_divergence(run_dir)
    if found is None:
        return None
    return (f"{os.path.join(run_dir, DIVERGED_FILE)}: this run diverged at step {found.get('step')} and did not "
            "finish; its last checkpoint is from before that, not a trained model")
