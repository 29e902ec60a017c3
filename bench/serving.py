"""Serving speed on CPU: an exported text-in classifier (loaded SavedModel) beside the same model
called through Keras.

    python bench/serving.py [--configs=small,base --seq_length=128 --batch_size=32
                             --latency_calls=N --throughput_calls=N]

For each configuration (BERT-Base: L=12, H=768, A=12, I=3072; small: L=4, H=256, A=4, I=1024;
both with BERT's 30,522-token vocab), a BertClassifier for sentence pairs (random weights) is
exported with `export_classifier` and loaded with `tf.saved_model.load`; its `serving_default`
takes the two texts and runs the in-graph tokenizer and packing, then the model. Beside it, the
same Keras model on the same text, its inputs built by the same in-graph preprocessing (a
tf.function of TextPacker), then called two ways: `model.predict_on_batch` (Keras' compiled
predict function) and `model(x)` (eager). Measured: latency at batch 1 (p50 and p99 of
`--latency_calls` calls, one sentence pair each) and throughput at `--batch_size` (sequences/s,
median of `--throughput_calls` calls), after a warm-up call; the paths take turns for `--rounds`
rounds, so that a change in the machine's load falls on all alike. The preprocessing alone
(tokenize + pack, tf.function) is timed the same way and reported as a share of the SavedModel's
latency.
The pairs come from data/corpus.txt, long enough to fill --seq_length (truncated as the
original). Both sides' outputs are checked equal (1e-5) before timing.
"""

import os
import random
import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from bert_tf import BertClassifier, BertConfig, BertEncoder
from bert_tf.preprocessing import text_preprocessing
from bert_tf.tasks.classifier.export import export_classifier
from bert_tf.tasks.classifier.inputs import TextPacker

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_list("configs", ["small", "base"], "Which configurations to measure (small, base).")
flags.DEFINE_integer("seq_length", 128, "")
flags.DEFINE_integer("batch_size", 32, "Batch of the throughput measurement.")
flags.DEFINE_integer("latency_calls", None, "Timed batch-1 calls (default: small 99, base 30).")
flags.DEFINE_integer("throughput_calls", None, "Timed batch calls (default: small 9, base 3).")
flags.DEFINE_integer("warmup_calls", 1, "Untimed calls of each path and batch size before the first round.")
flags.DEFINE_integer("rounds", 3, "The paths take turns this many times.")

CONFIGS = {
    "small": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
}
# Timed calls at batch 1 and at --batch_size: BERT-Base takes seconds per batch on a few cores.
DEFAULT_CALLS = {"small": (99, 9), "base": (30, 3)}
VOCAB_SIZE = 30522


def vocab_file(directory):
    """data/vocab.txt padded with [unusedN] tokens to BERT's 30,522 (tables of BERT's size)."""
    with open(os.path.join(REPO, "data", "vocab.txt"), encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    tokens += [f"[unused{i}]" for i in range(VOCAB_SIZE - len(tokens))]
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def sentence_pairs(count):
    """`count` (text_a, text_b), each side about seq_length / 2 words of the corpus."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    rng = random.Random(0)

    def text():
        out = []
        while len(" ".join(out).split()) < FLAGS.seq_length // 2:
            out.append(rng.choice(sentences))
        return " ".join(out)

    pairs = [(text(), text()) for _ in range(count)]
    return tf.constant([a for a, _ in pairs]), tf.constant([b for _, b in pairs])


def timed(fn, args, calls, warmup):
    """Seconds of each of `calls` calls of fn(*args), after `warmup` untimed ones; the result is
    read back (numpy), as a server would."""
    for _ in range(warmup):
        tf.nest.map_structure(np.asarray, fn(*args))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        tf.nest.map_structure(np.asarray, fn(*args))
        times.append(time.perf_counter() - start)
    return times


def percentile(times, q):
    return float(np.percentile(np.asarray(times) * 1000.0, q))


def measure(name, latency_calls, throughput_calls):
    config = BertConfig(vocab_size=VOCAB_SIZE, **CONFIGS[name])
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    with tempfile.TemporaryDirectory() as directory:
        vocab = vocab_file(directory)
        start = time.perf_counter()
        export_dir = os.path.join(directory, "export")
        export_classifier(model, ["0", "1"], "single", True, vocab, True, FLAGS.seq_length, export_dir)
        export_seconds = time.perf_counter() - start
        start = time.perf_counter()
        serving = tf.saved_model.load(export_dir).signatures["serving_default"]
        load_seconds = time.perf_counter() - start
        tokenizer, packer = text_preprocessing(vocab, True, FLAGS.seq_length)
        pack = tf.function(TextPacker(tokenizer, packer, pair=True).__call__, autograph=False)
        paths = {
            "SavedModel (text in)": lambda a, b: serving(text_a=a, text_b=b)["probabilities"],
            "Keras predict_on_batch": lambda a, b: model.predict_on_batch(pack(a, b)),
            "Keras model(x), eager": lambda a, b: model(pack(a, b), training=False),
            "preprocessing alone": lambda a, b: pack(a, b),
        }
        one, batch = sentence_pairs(1), sentence_pairs(FLAGS.batch_size)
        exported = np.asarray(paths["SavedModel (text in)"](*batch))
        keras_probabilities = tf.nn.softmax(paths["Keras predict_on_batch"](*batch)).numpy()
        difference = float(np.abs(exported - keras_probabilities).max())
        if difference > 1e-5:
            raise AssertionError(f"the SavedModel and Keras differ by {difference}")
        # The paths take turns, round after round, so that a change in the machine's load falls on
        # all of them alike; each path's times are pooled over the rounds.
        latency, throughput = {path: [] for path in paths}, {path: [] for path in paths}
        for round_ in range(FLAGS.rounds):
            warmup = FLAGS.warmup_calls if round_ == 0 else 0
            for path, fn in paths.items():
                latency[path] += timed(fn, one, max(1, latency_calls // FLAGS.rounds), warmup)
                throughput[path] += timed(fn, batch, max(1, throughput_calls // FLAGS.rounds), warmup)
        rows = {
            path: (
                percentile(latency[path], 50),
                percentile(latency[path], 99),
                FLAGS.batch_size / statistics.median(throughput[path]),
            )
            for path in paths
        }
    print(f"\n{name}: L={config.num_hidden_layers} H={config.hidden_size} A={config.num_attention_heads} "
          f"I={config.intermediate_size}, vocab {VOCAB_SIZE}, seq {FLAGS.seq_length}; export {export_seconds:.1f} s, "
          f"load {load_seconds:.1f} s; outputs differ by {difference:.1e}")
    print(
        f"  batch 1: {len(latency[path])} calls; batch {FLAGS.batch_size}: median of {len(throughput[path])} calls; "
        f"{FLAGS.rounds} rounds; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  {'':24} {'p50 ms (b1)':>12} {'p99 ms (b1)':>12} {f'seq/s (b{FLAGS.batch_size})':>13}")
    for path, (p50, p99, per_second) in rows.items():
        print(f"  {path:24} {p50:12.1f} {p99:12.1f} {per_second:13.1f}")
    saved = rows["SavedModel (text in)"]
    prep = rows["preprocessing alone"]
    print(f"  preprocessing share of the SavedModel: {100 * prep[0] / saved[0]:.1f}% of the batch-1 p50, "
          f"{100 * saved[2] / prep[2]:.1f}% of the batch-{FLAGS.batch_size} time")
    return rows


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # the export's own info lines
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPU cores")
    for name in FLAGS.configs:
        latency_calls, throughput_calls = DEFAULT_CALLS[name]
        measure(name, FLAGS.latency_calls or latency_calls, FLAGS.throughput_calls or throughput_calls)


if __name__ == "__main__":
    app.run(main)
