"""Small-scale checks of the paper's pre-training ablations on the embedded data: Table 8's
masking splits and §5.1's "No NSP", each a command line of the scripts.

    python bench/pretraining_ablations.py [--steps=300 --work_dir=/tmp/ablations]
    python bench/pretraining_ablations.py --smoke --work_dir=DIR   # one run of 2 steps: that it still runs

data/corpus.txt is cut into training text (its first 25 documents) and held-out text (the last
5). Every run pre-trains data/bert_config_tiny.json for `--steps` steps on records made from the
training text with its own flags, and is evaluated on the same held-out records (the default
80/10/10 split, sentence pairs): masked-LM accuracy and loss, and next-sentence accuracy where
the run has that head. Prints each command line, then a Markdown table. These are checks that
the options work and move the figures the way their definition says, at a scale where a model
learns little more than word frequencies and copying: not the paper's numbers.
"""

import os
import subprocess
import sys
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("steps", 300, "Pre-training steps per run.")
flags.DEFINE_string("work_dir", "/tmp/pretraining_ablations", "Where the records and runs go.")
flags.DEFINE_boolean("smoke", False, "Only the last run (a data flag and a training flag), 2 steps, dupe_factor 1.")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
SHAPE = ["--max_seq_length=64", "--max_predictions_per_seq=10"]
# Name (Table 8's MASK/SAME/RND percentages), create_pretraining_data.py's flags, run_pretraining.py's.
RUNS = [
    ("80/10/10 (default)", [], []),
    ("100/0/0", ["--mask_token_prob=1.0", "--random_token_prob=0.0"], []),
    ("80/0/20", ["--mask_token_prob=0.8", "--random_token_prob=0.2"], []),
    ("80/20/0", ["--mask_token_prob=0.8", "--random_token_prob=0.0"], []),
    ("0/20/80", ["--mask_token_prob=0.0", "--random_token_prob=0.8"], []),
    ("0/0/100", ["--mask_token_prob=0.0", "--random_token_prob=1.0"], []),
    ("No NSP, same records", [], ["--next_sentence_prediction=false"]),
    ("No NSP, single segments", ["--next_sentence=false"], ["--next_sentence_prediction=false"]),
]


def _run(script, *args):
    command = [sys.executable, os.path.join("run_scripts", script), *args, "--noprogress"]
    print(" ".join(command[1:]), flush=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])


def _split_corpus(work):
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        documents = f.read().strip().split("\n\n")
    paths = {}
    for name, part in (("train", documents[:25]), ("heldout", documents[25:])):
        paths[name] = os.path.join(work, f"{name}.txt")
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write("\n\n".join(part) + "\n")
    return paths


def _records(text, output, *extra):
    _run(
        "create_pretraining_data.py", f"--input_file={text}", f"--output_file={output}",
        f"--vocab_file={DATA}/vocab.txt", *SHAPE, f"--dupe_factor={1 if FLAGS.smoke else 10}", *extra,
    )


def main(argv):
    del argv
    if FLAGS.smoke:
        FLAGS.steps = 2
    work = FLAGS.work_dir
    os.makedirs(work, exist_ok=True)
    text = _split_corpus(work)
    heldout = os.path.join(work, "heldout.tfrecord")
    _records(text["heldout"], heldout, "--random_seed=999")
    rows = []
    for i, (name, data_flags, train_flags) in enumerate(RUNS[-1:] if FLAGS.smoke else RUNS):
        records = os.path.join(work, f"train-{i}.tfrecord")
        _records(text["train"], records, *data_flags)
        output_dir = os.path.join(work, f"run-{i}")
        start = time.time()
        _run(
            "run_pretraining.py", f"--input_file={records}", f"--eval_input_file={heldout}",
            f"--output_dir={output_dir}", "--do_train=true", "--do_eval=true",
            f"--bert_config_file={DATA}/bert_config_tiny.json", *SHAPE, "--train_batch_size=32",
            "--eval_batch_size=6", f"--num_train_steps={FLAGS.steps}", f"--num_warmup_steps={FLAGS.steps // 10}",
            "--learning_rate=1e-3", f"--save_checkpoints_steps={FLAGS.steps}", *train_flags,
        )
        with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
            results = dict(line.strip().split(" = ") for line in f)
        nsp = results.get("next_sentence_accuracy")
        nsp = f"{float(nsp):.3f}" if nsp else "-"
        accuracy, loss = float(results["masked_lm_accuracy"]), float(results["masked_lm_loss"])
        rows.append(f"| {name} | {accuracy:.3f} | {loss:.2f} | {nsp} | {time.time() - start:.0f} s |")
    print("\n| run | masked LM accuracy | masked LM loss | next-sentence accuracy | time |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    app.run(main)
