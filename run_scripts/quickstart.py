"""The README quickstart: the whole road on the embedded data, from raw text to a served classifier.

1. create_pretraining_data.py on data/corpus.txt with the shipped vocab (data/vocab.txt, which
   learn_vocab.py reproduces);
2. run_pretraining.py: a 2-layer, hidden-64 BERT (data/bert_config_tiny.json) for 1,500 steps
   with a progress bar, then the original's evaluation (on the training files, as the original
   does when no other eval data is given: the corpus is far too small to generalise from);
3. run_classifier.py from that checkpoint on data/sentiment, a two-class sentence task in GLUE
   SST-2's layout (so --task_name=sst-2 reads it), evaluated on its dev set;
4. export_saved_model.py --export_type=classifier: a SavedModel that takes raw text;
5. classify.py, written beside the outputs: loads the export with TensorFlow and tensorflow-text
   alone (nothing of bert_tf) and classifies the sentences of data/sentiment/test.tsv, each marked
   right or wrong against the sentiment it was written with.

After each step it prints the step's headline figure and where its outputs are. The same
commands with bigger flags are the path to a real run.
"""

import os
import re
import subprocess
import sys
import time

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.io_utils import check_output_dir
from bert_tf.training.settings import check_weights_may_change
from run_scripts import hide_startup_lines, min_log_level
from run_scripts.flag_settings import fail

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "/tmp/bert_tf_quickstart", "Where to write everything.")
flags.DEFINE_integer("num_train_steps", 1500, "Pre-training steps.")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
TASK = os.path.join(DATA, "sentiment")
SEQ_LENGTH, MAX_PREDICTIONS = 64, 10
# The sentiment each sentence of data/sentiment/test.tsv was written with (test.tsv, as SST-2's, has none).
TEST_LABELS = ("1", "0", "1", "0", "1", "0")
LABEL_NAMES = {"0": "negative", "1": "positive"}
# classify.py's line: "  positive (label 1, probability 0.998): The sentence."
CLASSIFIED = re.compile(r"^  (\w+) \(label (\w+), probability ([\d.]+)\): (.*)$")

# Written to OUTPUT_DIR/classify.py: serving needs nothing of this repository.
CLASSIFY_PY = '''"""Classifies sentences with the quickstart's export, using TensorFlow and tensorflow-text alone.

    python classify.py EXPORT_DIR "A sentence." ["Another one." ...]
"""

import os
import sys


def avx512():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    except OSError:
        return False


# TensorFlow reads this once, as it loads: oneDNN's kernels serve an export faster on CPUs with
# AVX-512, Eigen's on AVX2 CPUs without it (measured: docs/speed.md). Your own setting wins.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1" if avx512() else "0")

import tensorflow as tf  # noqa: E402 - after the kernel choice above
import tensorflow_text  # noqa: E402, F401 - registers the ops of the export's tokenizer

LABEL_NAMES = {"0": "negative", "1": "positive"}  # SST-2's labels

model = tf.saved_model.load(sys.argv[1])
sentences = sys.argv[2:]
outputs = model.signatures["serving_default"](text_a=tf.constant(sentences))
for sentence, label, probabilities in zip(sentences, outputs["label"].numpy(), outputs["probabilities"].numpy()):
    label = label.decode()
    print(f"  {LABEL_NAMES.get(label, label)} (label {label}, probability {probabilities.max():.3f}): {sentence}")
'''


def _run(script, *args):
    """Runs a step; a failed one stops the quickstart with one line (its own error is above)."""
    command = [sys.executable, os.path.join(REPO, "run_scripts", script), *args]
    print("\n$ " + " ".join(["python", f"run_scripts/{script}", *args]), flush=True)
    code = subprocess.run(command).returncode
    if code:
        fail(f"{script} failed (exit code {code}); its error is above")


def _read_results(path):
    with open(path, encoding="utf-8") as f:
        return dict(line.strip().split(" = ") for line in f if line.strip())


def _tsv_column(path, column):
    """A column of a TSV file with a header (the task's files are ours: one tab-free cell each)."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[column] for line in f.readlines()[1:] if line.strip()]


def _pretraining_figures(data_file):
    """(instances, the masked-LM accuracy of always predicting the most frequent token)."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.data import tfrecords

    spec = tfrecords.pretraining_feature_spec(SEQ_LENGTH, MAX_PREDICTIONS)
    ids, weights = [], []
    for record in tf.data.TFRecordDataset(data_file):
        parsed = tf.io.parse_single_example(record, spec)
        ids.append(parsed["masked_lm_ids"].numpy())
        weights.append(parsed["masked_lm_weights"].numpy())
    real = np.concatenate(ids)[np.concatenate(weights) > 0]
    return len(ids), np.bincount(real).max() / len(real)


def _marks():
    """(right, wrong): ✓ and ✗, or + and x where stdout cannot print them."""
    try:
        "\u2713\u2717".encode(sys.stdout.encoding or "ascii")
        return "\u2713", "\u2717"
    except (LookupError, UnicodeEncodeError):
        return "+", "x"


def _classify(out, export_dir):
    """Writes classify.py, runs it on test.tsv's sentences in a process of its own, marks each answer and
    returns (classify.py's path, how many it got right, how many sentences)."""
    program = os.path.join(out, "classify.py")
    with open(program, "w", encoding="utf-8") as f:
        f.write(CLASSIFY_PY)
    sentences = _tsv_column(os.path.join(TASK, "test.tsv"), 1)
    print(f"\n$ python {program} {export_dir} " + " ".join(f'"{s}"' for s in sentences), flush=True)
    result = subprocess.run([sys.executable, program, export_dir, *sentences], capture_output=True, text=True)
    sys.stderr.write(hide_startup_lines(result.stderr, min_log_level()))  # TensorFlow's, as in our scripts
    if result.returncode:
        sys.stdout.write(result.stdout)
        fail(f"classify.py failed (exit code {result.returncode}); its error is above")
    right = 0
    for line, written in zip(result.stdout.splitlines(), TEST_LABELS, strict=True):
        name, label, probability, sentence = CLASSIFIED.match(line).groups()
        right += label == written
        wrong = "" if label == written else f", written as {LABEL_NAMES[written]}"
        print(f"  {_marks()[label != written]} {name} (label {label}, probability {probability}){wrong}: {sentence}")
    return program, right, len(sentences)


def main(argv):
    del argv
    start, out = time.time(), FLAGS.output_dir
    if FLAGS.num_train_steps < 1:
        fail(f"--num_train_steps={FLAGS.num_train_steps} must be at least 1")
    try:  # before any work: a bad folder, or an environment that cannot train, would fail in a later step
        check_weights_may_change()
        check_output_dir(out)
        os.makedirs(out, exist_ok=True)
    except (ValueError, OSError) as e:
        fail(str(e))
    data, model_dir = os.path.join(out, "train.tfrecord"), os.path.join(out, "pretraining_output")
    lengths = [f"--max_seq_length={SEQ_LENGTH}", f"--max_predictions_per_seq={MAX_PREDICTIONS}"]
    vocab, config = os.path.join(DATA, "vocab.txt"), os.path.join(DATA, "bert_config_tiny.json")
    _run(
        "create_pretraining_data.py", f"--input_file={os.path.join(DATA, 'corpus.txt')}", f"--output_file={data}",
        f"--vocab_file={vocab}", "--do_lower_case=True", *lengths, "--dupe_factor=20",
    )
    instances, baseline = _pretraining_figures(data)
    print(f"==> 1. {instances} pre-training instances written to {data}")
    steps = FLAGS.num_train_steps
    _run(
        "run_pretraining.py", f"--input_file={data}", f"--output_dir={model_dir}", "--do_train=True", "--do_eval=True",
        f"--bert_config_file={config}", "--train_batch_size=32", "--eval_batch_size=32", *lengths,
        f"--num_train_steps={steps}", f"--num_warmup_steps={steps // 10}", "--learning_rate=1e-3",
        f"--save_checkpoints_steps={max(1, steps // 4)}", "--max_eval_steps=20", "--steps_per_execution=20",
    )
    results = _read_results(os.path.join(model_dir, "eval_results.txt"))
    print(
        f"==> 2. masked-LM accuracy {float(results['masked_lm_accuracy']):.3f} after {results['global_step']} steps "
        f"(always predicting the most frequent token: {baseline:.3f}; uniform chance: {1 / 948:.4f}); "
        f"next-sentence accuracy {float(results['next_sentence_accuracy']):.3f}\n"
        f"    checkpoints and eval_results.txt in {model_dir} (tensorboard --logdir={model_dir})"
    )
    classifier_dir = os.path.join(out, "classifier_output")
    _run(
        "run_classifier.py", "--task_name=sst-2", f"--data_dir={TASK}", f"--vocab_file={vocab}",
        f"--bert_config_file={config}", f"--init_checkpoint={model_dir}", f"--output_dir={classifier_dir}",
        "--do_train=True", "--do_eval=True", "--max_seq_length=32", "--train_batch_size=16", "--eval_batch_size=40",
        "--learning_rate=5e-4", "--num_train_epochs=40",
    )
    accuracy = float(_read_results(os.path.join(classifier_dir, "eval_results.txt"))["eval_accuracy"])
    dev = len(_tsv_column(os.path.join(TASK, "dev.tsv"), 0))
    print(f"==> 3. eval accuracy {accuracy:.3f} on the {dev} sentences of {TASK}/dev.tsv\n    run in {classifier_dir}")
    export_dir = os.path.join(out, "classifier_export")
    _run(
        "export_saved_model.py", "--export_type=classifier", f"--init_checkpoint={classifier_dir}",
        f"--export_dir={export_dir}", "--overwrite",
    )
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(export_dir) for f in files)
    print(f"==> 4. SavedModel of {size / 1e6:.1f} MB in {export_dir}")
    (program, right, total), (yes, no) = _classify(out, export_dir), _marks()
    print(
        f"==> 5. {right} of {total} right ({yes}: as written, {no}: not), served by {program} "
        "with TensorFlow and tensorflow-text alone\n    A 2-layer, hidden-64 model trained for seconds on 30 short "
        "documents and 120 sentences makes mistakes\n    of its own; that bert_tf computes what Google's BERT "
        "computes is what the test suite checks (python -m pytest)."
    )
    print(f"\nQuickstart done in {time.time() - start:.0f} s. Everything is in {out}")


if __name__ == "__main__":
    app.run(main)
