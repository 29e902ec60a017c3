"""What reading long texts as windows buys: run_classifier's settings on a long-document set where
the label is decided by one passage at a random place, read by truncation (--max_windows=1, the
original) and by windows pooled by their maximum and their mean.

    python bench/long_text.py [--texts=200 --dev_texts=100 --min_pieces=1000 --max_pieces=3000
                               --max_seq_length=128 --doc_stride=96 --max_windows=32 --epochs=2
                               --threads=N]
    python bench/long_text.py --smoke  # tiny texts and runs (the suite's)

The set is made here, from this repository's own text (data/): each text is sentences of
data/corpus.txt, which say nothing of the label, drawn until the text has --min_pieces to
--max_pieces word pieces (data/vocab.txt), with one deciding passage put at a random place among
them: "W W W W W.", W the label's word (`label_words`: the two vocab words that the fewest corpus
sentences hold; those sentences are left out of the filler). The passage is blunt on purpose: the
model is tiny and starts from random weights (below), and what is measured is whether each way
of reading finds the passage, not how well a model reads it.

The model is data/bert_config_tiny.json's, first taught to read the passage: a "reader" run
fine-tunes it from random weights on short texts of the same kind (one window each, the passage
among 60 to 120 pieces of filler), as a pre-trained model comes to a task already able to read
text. A model from random weights does not learn the long set within this budget by any way of
reading: with 10 to 30 windows a text, the label's evidence is one window in many. Each way of
reading then fine-tunes the reader on the long training set through `bert_tf.fine_tune` in a
process of its own; another process exports the run (`export_saved_model`, text in) and serves
the dev texts through it one at a time, as a service would. It prints the dev accuracy of the
export's labels, the training time, the median serving time per text (after one warm-up call),
the peak memory (resident set) of each process, and how serving time grows with the text: the
median time for a text of --max_pieces over one of half as many pieces.
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
flags.DEFINE_integer("texts", 200, "Long training texts.", lower_bound=4)
flags.DEFINE_integer("dev_texts", 100, "Long dev texts.", lower_bound=2)
flags.DEFINE_integer("min_pieces", 1000, "The shortest long text, in word pieces.", lower_bound=1)
flags.DEFINE_integer("max_pieces", 3000, "The longest long text, in word pieces.", lower_bound=1)
flags.DEFINE_integer("max_seq_length", 128, "The window (data/bert_config_tiny.json has 128 positions).")
flags.DEFINE_integer("doc_stride", 96, "Pieces between window starts.", lower_bound=1)
flags.DEFINE_integer("max_windows", 32, "The most windows a text takes (3,000 pieces: 31 at the defaults).")
flags.DEFINE_integer("epochs", 2, "Epochs over the long training set.", lower_bound=1)
flags.DEFINE_integer("batch_size", 8, "Long training texts per batch.", lower_bound=2)
flags.DEFINE_float("learning_rate", 1e-4, "Adam's learning rate on the long set (from the reader).")
flags.DEFINE_integer("reader_texts", 600, "Short texts the reader learns from.", lower_bound=4)
flags.DEFINE_integer("threads", os.cpu_count(), "TensorFlow's intra-op threads.")
flags.DEFINE_string("workdir", None, "Where the sets and the runs go (default: a temporary folder).")
flags.DEFINE_bool("smoke", False, "Tiny texts, window and runs.")
flags.DEFINE_string("worker", None, "Internal: run one stage (`mode:stage`) and print its figures.")

SMOKE = {"texts": 8, "dev_texts": 2, "min_pieces": 40, "max_pieces": 80, "max_seq_length": 16, "doc_stride": 8,
         "max_windows": 12, "epochs": 1, "batch_size": 4, "reader_texts": 8}
MODES = {"truncation": dict(max_windows=1), "windows, max": dict(window_pooling="max"),
         "windows, mean": dict(window_pooling="mean")}
VOCAB = os.path.join(REPO, "data", "vocab.txt")
CONFIG = os.path.join(REPO, "data", "bert_config_tiny.json")
READER_PIECES = (60, 120)  # the reader's texts: one window of 128


def label_words(tokenizer, filler):
    """`((word of label 0, word of label 1), filler)`: the two whole vocab words that the fewest
    filler sentences hold, and the filler without those sentences."""
    held = [set(tokenizer.tokenize(sentence)) for sentence in filler]
    candidates = [w for w in tokenizer.vocab if w.isalpha() and len(w) > 3]
    words = sorted(candidates, key=lambda w: (sum(w in h for h in held), w))[:2]
    return tuple(words), [s for s, h in zip(filler, held, strict=True) if not h & set(words)]


def write_sets(workdir, seed=0):
    """The reader's short set and the long set, train.tsv and dev.tsv in SST-2's layout (sentence,
    label) in `workdir`/reader and `workdir`/long; returns the long texts' piece counts."""
    from bert_tf.tokenization import FullTokenizer

    tokenizer = FullTokenizer(VOCAB, do_lower_case=True)
    corpus = [line.strip() for line in open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8")]
    words, filler = label_words(tokenizer, [line for line in corpus if line])
    filler = [(s, len(tokenizer.tokenize(s))) for s in filler]
    rng = random.Random(seed)
    pieces = {}
    sets = {"reader": ((FLAGS.reader_texts, 50), READER_PIECES),
            "long": ((FLAGS.texts, FLAGS.dev_texts), (FLAGS.min_pieces, FLAGS.max_pieces))}
    for folder, (counts, (low, high)) in sets.items():
        os.makedirs(os.path.join(workdir, folder), exist_ok=True)
        for name, count in zip(("train", "dev"), counts, strict=True):
            rows, lengths = [], []
            for _ in range(count):
                target, label = rng.randint(low, high), rng.randrange(2)
                passage = " ".join([words[label]] * 5) + "."
                text, n = [], len(tokenizer.tokenize(passage))
                while n < target:
                    sentence, length = rng.choice(filler)
                    text.append(sentence)
                    n += length
                text.insert(rng.randint(0, len(text)), passage)
                rows.append(f"{' '.join(text)}\t{label}")
                lengths.append(n)
            with open(os.path.join(workdir, folder, f"{name}.tsv"), "w", encoding="utf-8") as f:
                f.write("sentence\tlabel\n" + "\n".join(rows) + "\n")
            pieces[folder, name] = lengths
    return pieces


def _settings(mode, workdir):
    from bert_tf.tasks import classifier

    values = dict(task_name="SST-2", vocab_file=VOCAB, max_seq_length=FLAGS.max_seq_length, eval_batch_size=8,
                  save_checkpoints_steps=10**6, do_train=True)
    if mode == "reader":  # from random weights, on short texts: one window each
        return classifier.Settings(data_dir=os.path.join(workdir, "reader"),
                                   output_dir=os.path.join(workdir, "runs", "reader"), bert_config_file=CONFIG,
                                   train_batch_size=16, learning_rate=1e-3, num_train_epochs=10.0, do_eval=True,
                                   **values)
    values.update(MODES[mode])
    return classifier.Settings(
        data_dir=os.path.join(workdir, "long"), output_dir=os.path.join(workdir, "runs", mode.replace(", ", "_")),
        init_checkpoint=os.path.join(workdir, "runs", "reader"), train_batch_size=FLAGS.batch_size,
        learning_rate=FLAGS.learning_rate, num_train_epochs=float(FLAGS.epochs),
        doc_stride=FLAGS.doc_stride, **{"max_windows": FLAGS.max_windows, **values})


def _median_seconds(call, text, calls=3):
    call(text)  # warm-up: the first call of a shape traces
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call(text)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def _serve(settings):
    """Exports the run and serves the dev texts one by one: accuracy, median seconds per text, and
    the median seconds of a text of --max_pieces over one of half that."""
    import tensorflow as tf

    from bert_tf.export import saved_model

    export_dir = settings.output_dir + "_export"
    saved_model.export_saved_model(saved_model.Settings(export_type="classifier", init_checkpoint=settings.output_dir,
                                                        export_dir=export_dir, overwrite=True))
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    call = lambda text: serve(text_a=tf.constant([text]))  # noqa: E731
    with open(os.path.join(settings.data_dir, "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    correct, times = 0, []
    call(rows[0][0])
    for text, label in rows:
        start = time.perf_counter()
        predicted = call(text)["label"].numpy()[0].decode()
        times.append(time.perf_counter() - start)
        correct += predicted == label
    words = rows[0][0].split()
    longest = " ".join(words[i % len(words)] for i in range(FLAGS.max_pieces * 3 // 4))  # ~ --max_pieces pieces
    half = " ".join(longest.split()[: len(longest.split()) // 2])
    growth = _median_seconds(call, longest) / _median_seconds(call, half)
    return {"accuracy": correct / len(rows), "seconds_per_text": sorted(times)[len(times) // 2], "growth": growth}


def worker(spec):
    """One stage in this process (`reader:train`, or a way of reading and "train", "serve" or
    "both", the smoke run's one process for the two): prints a JSON line of its figures, by stage."""
    import tensorflow as tf

    from bert_tf import fine_tune

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    mode, stage = spec.split(":")
    settings = _settings(mode, FLAGS.workdir)
    out = {}
    for step in ("train", "serve") if stage == "both" else (stage,):
        start = time.perf_counter()
        figures = {"results": fine_tune(settings).results} if step == "train" else _serve(settings)
        figures["seconds"] = time.perf_counter() - start
        figures["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out[step] = figures
    print("FIGURES " + json.dumps(out))


def _run_worker(mode, stage):
    names = ("texts", "dev_texts", "min_pieces", "max_pieces", "max_seq_length", "doc_stride", "max_windows", "epochs",
             "batch_size", "learning_rate", "reader_texts", "threads")
    argv = [sys.executable, os.path.abspath(__file__), f"--worker={mode}:{stage}", f"--workdir={FLAGS.workdir}",
            f"--smoke={FLAGS.smoke}"]
    argv += [f"--{name}={FLAGS[name].value}" for name in names]
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if result.returncode != 0:
        raise SystemExit(f"{mode} {stage} failed:\n{result.stderr[-3000:]}")
    line = [x for x in result.stdout.splitlines() if x.startswith("FIGURES ")][-1]
    return json.loads(line[len("FIGURES "):])


def _trained_and_served(mode):
    """The train and serve figures of a way of reading: two processes (peak memory each its own),
    or one in the smoke run (fewer interpreters to start; its peak memory then covers both)."""
    if FLAGS.smoke:
        both = _run_worker(mode, "both")
        return both["train"], both["serve"]
    return _run_worker(mode, "train")["train"], _run_worker(mode, "serve")["serve"]


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

    if FLAGS.workdir and os.path.isdir(FLAGS.workdir) and os.listdir(FLAGS.workdir):
        # Its runs would resume as finished, and their training times would be no training's.
        raise SystemExit(f"--workdir={FLAGS.workdir} is not empty: give a new folder (or none: a temporary one)")
    FLAGS.workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="long_text_")
    pieces = write_sets(FLAGS.workdir)
    train, dev = pieces["long", "train"], pieces["long", "dev"]
    reader = _run_worker("reader", "train")["train"]
    print(f"reader: {FLAGS.reader_texts} short texts of {READER_PIECES[0]} to {READER_PIECES[1]} pieces, dev "
          f"accuracy {reader['results']['eval_accuracy']:.3f} ({reader['seconds']:.1f} s)")
    print(f"long set: {len(train)} training and {len(dev)} dev texts of {min(train + dev)} to {max(train + dev)} "
          f"pieces; window {FLAGS.max_seq_length}, stride {FLAGS.doc_stride}, at most {FLAGS.max_windows} windows; "
          f"{FLAGS.epochs} epochs, batch {FLAGS.batch_size}, {FLAGS.threads} threads")
    print("| reading | dev accuracy | training s | serving ms per text | longest / half-length text | peak MB "
          "training | peak MB serving |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mode in MODES:
        trained, served = _trained_and_served(mode)
        print(f"| {mode} | {served['accuracy']:.3f} | {trained['seconds']:.1f} | "
              f"{1000 * served['seconds_per_text']:.1f} | {served['growth']:.2f}x | {trained['peak_mb']:.0f} | "
              f"{served['peak_mb']:.0f} |")


if __name__ == "__main__":
    app.run(main)
