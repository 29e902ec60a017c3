"""What the lower-precision exports cost in accuracy (bench/serving.py measures what they buy in
speed): a run_classifier.py output_dir (single sentences) is exported as export_saved_model.py does,
in each format of `bert_tf.export.serving.FORMATS` (float32, int8 Dense kernels: `--quantize=int8`,
computing in bfloat16: `--mixed_precision=bf16`), and each export classifies a dev file: its
accuracy, and for int8 and bf16 how many predictions differ from float32's and the largest and mean
probability difference.
Each export also classifies every sentence in a request of its own: how far a text's
probabilities lie from those it gets inside the batch of the whole file (a serving process gives
the same text either, as requests come).

    python bench/serving_accuracy.py --run=RUN_DIR [--tsv=data/sentiment/dev.tsv]
    python bench/serving_accuracy.py --smoke  # fine-tunes the tiny config briefly first (the suite's)

--tsv: a GLUE SST-2 layout file (a header, then sentence TAB label). --smoke trains
data/bert_config_tiny.json from random weights on data/sentiment for --smoke_epochs epochs with
run_classifier.py, as a user starts it, into a temporary folder, and measures that run.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np
from absl import app, flags, logging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/serving_accuracy.py`: bert_tf from this checkout

FLAGS = flags.FLAGS
flags.DEFINE_string("run", None, "A run_classifier.py output_dir (single sentences): its float32, int8, bf16 exports.")
flags.DEFINE_string("tsv", os.path.join(REPO, "data", "sentiment", "dev.tsv"), "sentence TAB label, after a header.")
flags.DEFINE_bool("smoke", False, "Fine-tune the tiny config on data/sentiment first, and measure that run.")
flags.DEFINE_integer("smoke_epochs", 3, "--smoke's training epochs.")


def read_tsv(path):
    """(sentences, labels) of a header-first `sentence TAB label` file; a ValueError naming the file and
    line for a row that is not two columns."""
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    for number, row in enumerate(rows, 2):
        if len(row) != 2:
            raise ValueError(f"{path}:{number}: expected sentence TAB label, got {len(row)} columns")
    return [r[0] for r in rows], [r[1] for r in rows]


def exported_outputs(run, texts):
    """{name of a format (`bert_tf.export.serving.FORMATS`): the serving signature's outputs on
    `texts`} of `run`'s exports, each written as export_saved_model.py writes it and loaded with
    TensorFlow alone."""
    import tensorflow as tf

    from bert_tf.export import exports
    from bert_tf.export.serving import FORMATS, ServingOptions

    outputs = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, entry in FORMATS.items():
            serving = ServingOptions(**entry.options)
            exports.read("classifier", run, serving=serving).write(os.path.join(directory, name))
            serve = tf.saved_model.load(os.path.join(directory, name)).signatures["serving_default"]
            outputs[name] = {k: np.asarray(v) for k, v in serve(text_a=tf.constant(texts)).items()}
            outputs[name]["alone"] = np.concatenate(
                [np.asarray(serve(text_a=tf.constant([text]))["probabilities"]) for text in texts]
            )
    return outputs


def report(outputs, labels):
    """Prints each export's accuracy on `labels`, and how far the others' predictions are from float32's."""
    for name, out in outputs.items():
        correct = sum(label.decode() == want for label, want in zip(out["label"], labels, strict=True))
        print(f"  {name:8} dev accuracy {correct / len(labels):.4f} ({correct} of {len(labels)})")
    for name, out in outputs.items():
        difference = np.abs(out["alone"] - out["probabilities"])
        print(f"  {name} alone against in a batch of {len(labels)}: probabilities differ by {difference.max():.2e} "
              f"at most, {difference.mean():.2e} on average")
    reference = outputs["float32"]
    for name in (n for n in outputs if n != "float32"):
        changed = int((outputs[name]["label_id"] != reference["label_id"]).sum())
        difference = np.abs(outputs[name]["probabilities"] - reference["probabilities"])
        print(f"  {name} against float32: {changed} predictions differ; probabilities differ by "
              f"{difference.max():.2e} at most, {difference.mean():.2e} on average")


def smoke_run(directory):
    """A run_classifier.py output_dir: the tiny config fine-tuned from random weights on data/sentiment."""
    data = os.path.join(REPO, "data")
    command = [sys.executable, os.path.join(REPO, "run_scripts", "run_classifier.py"), "--task_name=sst-2",
               f"--data_dir={os.path.join(data, 'sentiment')}", f"--vocab_file={os.path.join(data, 'vocab.txt')}",
               f"--bert_config_file={os.path.join(data, 'bert_config_tiny.json')}", "--max_seq_length=32",
               "--do_train=true", "--do_eval=false", "--train_batch_size=16", "--learning_rate=1e-3",
               f"--num_train_epochs={FLAGS.smoke_epochs}", f"--output_dir={directory}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": REPO})
    return directory


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # the export's own info lines
    if FLAGS.smoke == bool(FLAGS.run):
        raise app.UsageError("--run (a run_classifier.py output_dir) is required, unless --smoke (not both)")
    if FLAGS.run and not os.path.isdir(FLAGS.run):
        raise app.UsageError(f"--run={FLAGS.run}: no such folder (a run_classifier.py output_dir)")
    try:
        texts, labels = read_tsv(FLAGS.tsv)
    except (OSError, ValueError) as e:
        raise app.UsageError(f"--tsv: {e}") from None
    with tempfile.TemporaryDirectory() as directory:
        run = smoke_run(directory) if FLAGS.smoke else FLAGS.run
        print(f"{run} on {FLAGS.tsv}:")
        report(exported_outputs(run, texts), labels)


if __name__ == "__main__":
    app.run(main)
