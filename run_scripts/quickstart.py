"""The README quickstart: pre-train a small BERT on the embedded corpus, end to end.

1. create_pretraining_data.py on data/corpus.txt with the shipped vocab (data/vocab.txt, which
   learn_vocab.py reproduces);
2. run_pretraining.py: a 2-layer, hidden-64 BERT (data/bert_config_tiny.json) for 1,500 steps
   with a progress bar, then the original's evaluation (on the training files, as the original
   does when no other eval data is given: the corpus is far too small to generalise from);
3. prints where the checkpoints, TensorBoard logs and eval results are, and the masked-LM
   accuracy reached next to the majority baseline (always predicting the most frequent token).

The same two commands with bigger flags are the path to a real pre-training run.
"""

import os
import subprocess
import sys

from absl import app, flags

from bert_tf.io_utils import check_output_dir
from run_scripts.common_flags import fail

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "/tmp/bert_tf_quickstart", "Where to write everything.")
flags.DEFINE_integer("num_train_steps", 1500, "Pre-training steps.")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")


def _run(script, *args):
    """Runs a step; a failed one stops the quickstart with one line (its own error is above)."""
    command = [sys.executable, os.path.join(REPO, "run_scripts", script), *args]
    print("\n$ " + " ".join(["python", f"run_scripts/{script}", *args]), flush=True)
    code = subprocess.run(command).returncode
    if code:
        fail(f"{script} failed (exit code {code}); its error is above")


def _majority_baseline(eval_file):
    import numpy as np
    import tensorflow as tf

    from bert_tf.data import tfrecords

    spec = tfrecords.pretraining_feature_spec(64, 10)
    ids, weights = [], []
    for record in tf.data.TFRecordDataset(eval_file):
        parsed = tf.io.parse_single_example(record, spec)
        ids.append(parsed["masked_lm_ids"].numpy())
        weights.append(parsed["masked_lm_weights"].numpy())
    ids, weights = np.concatenate(ids), np.concatenate(weights)
    real = ids[weights > 0]
    return np.bincount(real).max() / len(real)


def main(argv):
    del argv
    out = FLAGS.output_dir
    if FLAGS.num_train_steps < 1:
        fail(f"--num_train_steps={FLAGS.num_train_steps} must be at least 1")
    try:  # before any work: a bad folder would otherwise fail in the first step
        check_output_dir(out)
        os.makedirs(out, exist_ok=True)
    except (ValueError, OSError) as e:
        fail(str(e))
    data = os.path.join(out, "train.tfrecord")
    _run(
        "create_pretraining_data.py",
        f"--input_file={os.path.join(DATA, 'corpus.txt')}",
        f"--output_file={data}",
        f"--vocab_file={os.path.join(DATA, 'vocab.txt')}",
        "--do_lower_case=True",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--dupe_factor=20",
    )
    model_dir = os.path.join(out, "pretraining_output")
    _run(
        "run_pretraining.py",
        f"--input_file={data}",
        f"--output_dir={model_dir}",
        "--do_train=True",
        "--do_eval=True",
        f"--bert_config_file={os.path.join(DATA, 'bert_config_tiny.json')}",
        "--train_batch_size=32",
        "--eval_batch_size=32",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        f"--num_train_steps={FLAGS.num_train_steps}",
        f"--num_warmup_steps={FLAGS.num_train_steps // 10}",
        "--learning_rate=1e-3",
        f"--save_checkpoints_steps={max(1, FLAGS.num_train_steps // 4)}",
        "--max_eval_steps=20",
        "--steps_per_execution=20",
    )
    with open(os.path.join(model_dir, "eval_results.txt"), encoding="utf-8") as f:
        results = dict(line.strip().split(" = ") for line in f if line.strip())
    baseline = _majority_baseline(data)
    print(f"\nQuickstart done. Output in {out}:")
    print(f"  pre-training data: {data}")
    print(f"  checkpoints: {model_dir}")
    print(f"  TensorBoard: tensorboard --logdir={model_dir}")
    print(f"  eval results: {os.path.join(model_dir, 'eval_results.txt')}")
    print(
        f"  masked-LM accuracy {float(results['masked_lm_accuracy']):.3f} after "
        f"{results['global_step']} steps (always predicting the most frequent token: {baseline:.3f}; "
        f"uniform chance: {1 / 948:.4f}); next-sentence accuracy {float(results['next_sentence_accuracy']):.3f}"
    )


if __name__ == "__main__":
    app.run(main)
