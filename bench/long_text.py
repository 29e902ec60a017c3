"""What reading long texts as windows buys: run_classifier's settings on a long-document set where
the label is decided by one passage at a random place, read by truncation (--max_windows=1, the
original) and by windows pooled by their maximum and their mean.

    python bench/long_text.py [--texts=400 --min_pieces=1000 --max_pieces=3000 --max_seq_length=128
                               --doc_stride=64 --max_windows=48 --epochs=4 --threads=N]
    python bench/long_text.py --smoke  # tiny texts and runs (the suite's)

The set is made here, from this repository's own text (data/): each text is sentences of
data/corpus.txt, which say nothing of the label, drawn until the text has --min_pieces to
--max_pieces word pieces (data/vocab.txt), with one sentence of data/sentiment (a positive or a
negative one, the text's label) put at a random place among them. Train and dev sets are
disjoint in their deciding sentences. Each way of reading trains the same model (the tiny config
of data/bert_config_tiny.json, from its random initialization, seed 0) through
`bert_tf.fine_tune` in a process of its own, then predicts the dev set in another; it prints dev
accuracy, training time, prediction time per text and the peak memory (resident set) of each
process.
"""

import json
import os
import random
import resource
import subprocess
import sys
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/long_text.py`: bert_tf from this checkout

FLAGS = flags.FLAGS
flags.DEFINE_integer("texts", 400, "Training texts (the dev set has a quarter as many).", lower_bound=8)
flags.DEFINE_integer("min_pieces", 1000, "The shortest text, in word pieces.", lower_bound=1)
flags.DEFINE_integer("max_pieces", 3000, "The longest text, in word pieces.", lower_bound=1)
flags.DEFINE_integer("max_seq_length", 128, "The window (data/bert_config_tiny.json has 128 positions).")
flags.DEFINE_integer("doc_stride", 64, "Pieces between window starts.", lower_bound=1)
flags.DEFINE_integer("max_windows", 48, "The most windows a text takes (3,000 pieces: 46 at the defaults).")
flags.DEFINE_integer("epochs", 4, "Training epochs.", lower_bound=1)
flags.DEFINE_integer("batch_size", 16, "Training texts per batch.", lower_bound=2)
flags.DEFINE_integer("threads", os.cpu_count(), "TensorFlow's intra-op threads.")
flags.DEFINE_string("workdir", None, "Where the set and the runs go (default: a temporary folder).")
flags.DEFINE_bool("smoke", False, "Tiny texts, window and runs.")
flags.DEFINE_string("worker", None, "Internal: run one way of reading (`mode:stage`) and print its figures.")

SMOKE = {"texts": 8, "min_pieces": 40, "max_pieces": 80, "max_seq_length": 16, "doc_stride": 8, "max_windows": 12,
         "epochs": 1, "batch_size": 4}
MODES = {"truncation": dict(max_windows=1), "windows, max": dict(window_pooling="max"),
         "windows, mean": dict(window_pooling="mean")}


def _sentences(path, column=None):
    lines = [line.strip() for line in open(path, encoding="utf-8") if line.strip()]
    if column is None:
        return lines
    rows = [line.split("\t") for line in lines[1:]]
    return [(row[0], row[1]) for row in rows]


def write_set(directory, seed=0):
    """train.tsv and dev.tsv in SST-2's layout (sentence, label) under `directory`; returns their
    texts' piece counts."""
    from bert_tf.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(REPO, "data", "vocab.txt"), do_lower_case=True)
    filler = [(s, len(tokenizer.tokenize(s))) for s in _sentences(os.path.join(REPO, "data", "corpus.txt"))]
    deciding = []
    for name in ("train", "dev", "test"):
        deciding += _sentences(os.path.join(REPO, "data", "sentiment", f"{name}.tsv"), column=True)
    rng = random.Random(seed)
    rng.shuffle(deciding)
    split = len(deciding) * 3 // 4  # the dev set's deciding sentences are none of training's
    pieces = {}
    for name, count, passages in (("train", FLAGS.texts, deciding[:split]), ("dev", FLAGS.texts // 4,
                                                                              deciding[split:])):
        rows, lengths = [], []
        for _ in range(count):
            target = rng.randint(FLAGS.min_pieces, FLAGS.max_pieces)
            passage, label = rng.choice(passages)
            text, n = [], len(tokenizer.tokenize(passage))
            while n < target:
                sentence, length = rng.choice(filler)
                text.append(sentence)
                n += length
            text.insert(rng.randint(0, len(text)), passage)
            rows.append(f"{' '.join(text)}\t{label}")
            lengths.append(n)
        with open(os.path.join(directory, f"{name}.tsv"), "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n" + "\n".join(rows) + "\n")
        pieces[name] = lengths
    return pieces


def _settings(mode, stage, workdir):
    from bert_tf.tasks import classifier

    out = os.path.join(workdir, "runs", mode.replace(", ", "_"))
    values = dict(
        task_name="SST-2", data_dir=os.path.join(workdir, "data"), output_dir=out,
        vocab_file=os.path.join(REPO, "data", "vocab.txt"),
        bert_config_file=os.path.join(REPO, "data", "bert_config_tiny.json"),
        max_seq_length=FLAGS.max_seq_length, train_batch_size=FLAGS.batch_size, eval_batch_size=8,
        learning_rate=1e-3, num_train_epochs=float(FLAGS.epochs), max_windows=FLAGS.max_windows,
        doc_stride=FLAGS.doc_stride, seed=0, save_checkpoints_steps=10**6,
    )
    values.update(MODES[mode])
    if stage == "train":
        values.update(do_train=True)
    else:
        values.update(do_eval=True)
    return classifier.Settings(**values)


def worker(spec):
    """One way of reading, one stage ("train" or "eval"), in this process: prints a JSON line."""
    import tensorflow as tf

    from bert_tf import fine_tune

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    mode, stage = spec.split(":")
    settings = _settings(mode, stage, FLAGS.workdir)
    start = time.perf_counter()
    done = fine_tune(settings)
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("FIGURES " + json.dumps({"seconds": seconds, "peak_mb": peak_mb, "results": done.results or {}}))


def _run_worker(mode, stage):
    argv = [sys.executable, os.path.abspath(__file__), f"--worker={mode}:{stage}", f"--workdir={FLAGS.workdir}"]
    argv += [f"--{name}={FLAGS[name].value}" for name in ("texts", "min_pieces", "max_pieces", "max_seq_length",
                                                          "doc_stride", "max_windows", "epochs", "batch_size",
                                                          "threads")]
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if result.returncode != 0:
        raise SystemExit(f"{mode} {stage} failed:\n{result.stderr[-3000:]}")
    line = [x for x in result.stdout.splitlines() if x.startswith("FIGURES ")][-1]
    return json.loads(line[len("FIGURES "):])


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    if FLAGS.worker:
        return worker(FLAGS.worker)
    if FLAGS.min_pieces > FLAGS.max_pieces:
        raise SystemExit(f"--min_pieces={FLAGS.min_pieces} is more than --max_pieces={FLAGS.max_pieces}")
    import tempfile

    FLAGS.workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="long_text_")
    os.makedirs(os.path.join(FLAGS.workdir, "data"), exist_ok=True)
    pieces = write_set(os.path.join(FLAGS.workdir, "data"))
    dev = pieces["dev"]
    print(f"set: {len(pieces['train'])} training and {len(dev)} dev texts of {min(dev + pieces['train'])} to "
          f"{max(dev + pieces['train'])} pieces; window {FLAGS.max_seq_length}, stride {FLAGS.doc_stride}, at most "
          f"{FLAGS.max_windows} windows; {FLAGS.epochs} epochs, batch {FLAGS.batch_size}, {FLAGS.threads} threads")
    print("| reading | dev accuracy | training s | eval ms per text | peak MB training | peak MB eval |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for mode in MODES:
        train = _run_worker(mode, "train")
        evaluated = _run_worker(mode, "eval")
        accuracy = evaluated["results"]["eval_accuracy"]
        print(f"| {mode} | {accuracy:.3f} | {train['seconds']:.1f} | {1000 * evaluated['seconds'] / len(dev):.1f} | "
              f"{train['peak_mb']:.0f} | {evaluated['peak_mb']:.0f} |")


if __name__ == "__main__":
    app.run(main)
