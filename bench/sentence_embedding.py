"""Sentence-embedding speed on CPU, text in: our embedder export beside sentence-transformers on
PyTorch (`SentenceTransformer.encode`), the same model, each side in a process of its own.

    python bench/sentence_embedding.py --peer_dirs=ST_DIR,TORCH_DIR [--config=minilm --batch_size=32
                                       --batches=8 --latency_calls=60 --rounds=3 --threads=0]
    python bench/sentence_embedding.py --smoke [--peer_dirs=...]  # tiny config, a few calls (the suite's)

The model: a sentence-transformers folder as all-MiniLM-L6-v2's is laid out (a BERT module of
--config's shape with random weights, vocab data/vocab.txt padded with [unusedN] to 30,522 tokens,
mean pooling, Normalize, max length --seq_length), written by bert_tf (`hf.write_folder` of a
BertSentenceEmbedder). Ours: that folder exported as a user does it, `python
run_scripts/export_saved_model.py --export_type=embedder --init_checkpoint=FOLDER` (its default
serving options: the request's length, padding skipped without XLA), loaded with
`tf.saved_model.load` and called through `serving_default(text_a)`: tokenization, packing and
pooling in the graph. The peer (never a dependency: `pip install --target DIR sentence-transformers`
and torch; --peer_dirs, else skipped with a message): `SentenceTransformer(FOLDER, device="cpu")`
and its `encode(texts, batch_size=B)`, which tokenizes with BertTokenizerFast from the same
vocab.txt and pads each batch to its longest, as its docs run it.

Text: data/corpus.txt's sentences as they are (real English, 7 to 16 words). Throughput: each side
embeds --batches consecutive batches of --batch_size sentences, one call per batch (sequences/s);
batch 1: --latency_calls calls of one sentence each, cycling through the corpus (p50 and p99).
Before timing, both sides embed the same 64 sentences and the bench prints the largest difference.

Each side runs in a process of its own (this script again, with --side), so that TensorFlow's and
PyTorch's thread pools never compete; both get --threads threads (0: the cores), set as each
library documents (tf.config.threading, torch.set_num_threads). They stay loaded and take turns for
--rounds rounds (the other waits on a pipe); the figures are the medians over rounds, each side's
ratio to the peer measured in the same run.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/sentence_embedding.py`: bert_tf from this checkout

import bench_text  # noqa: E402  (bench/, this script's folder)

FLAGS = flags.FLAGS
flags.DEFINE_enum("config", "minilm", ["minilm", "base", "tiny"], "The BERT module's shape.")
flags.DEFINE_integer("seq_length", 256, "The folder's max length (all-MiniLM-L6-v2's 256): longer texts are cut.")
flags.DEFINE_integer("batch_size", 32, "Sentences per call of the throughput measurement.", lower_bound=1)
flags.DEFINE_integer("batches", 8, "Timed calls of --batch_size per round.", lower_bound=1)
flags.DEFINE_integer("latency_calls", 60, "Timed calls of one sentence per round.", lower_bound=1)
flags.DEFINE_integer("rounds", 3, "The sides take turns this many times.", lower_bound=1)
flags.DEFINE_integer("threads", 0, "Each side's intra-op threads (0: the machine's cores).", lower_bound=0)
flags.DEFINE_list("export_flags", [], "More flags of export_saved_model.py for our export, e.g. "
                  "--export_flags=--serving_jit_compile=true or --export_flags=--quantize=int8 (default: none, its "
                  "defaults).")
flags.DEFINE_list("peer_dirs", [], "Folders holding sentence-transformers, transformers and torch (appended to "
                  "sys.path of the peer's process).")
flags.DEFINE_bool("smoke", False, "The tiny config, a few calls (flags given still win).")
flags.DEFINE_enum("side", None, ["prepare", "ours", "theirs"], "Internal: write the model folder and our export "
                  "(prepare), or serve a side to the driving process.")
flags.DEFINE_string("side_dir", None, "Internal: the folder the sides share (the model folder, the export).")

CONFIGS = {
    "minilm": dict(num_hidden_layers=6, hidden_size=384, num_attention_heads=12, intermediate_size=1536),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "tiny": dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64),
}
SMOKE = dict(config="tiny", seq_length=32, batch_size=8, batches=2, latency_calls=4, rounds=1)
VOCAB_SIZE = 30522
AGREEMENT_TEXTS = 64
PEER_NAME = "sentence-transformers (PyTorch)"


def threads():
    return FLAGS.threads or os.cpu_count()


# ---------------------------------------------------------------------------------------------
# The model, written once by the driving process's helper run (TensorFlow in that process only)


def write_model(directory):
    """The sentence-transformers folder (`directory`/model) and our export of it (`directory`/export)."""
    from bert_tf import BertConfig, BertEncoder, BertSentenceEmbedder
    from bert_tf.checkpoints import hf
    from bert_tf.runs.record import RunRecord

    vocab = bench_text.padded_vocab(directory, VOCAB_SIZE)
    config = BertConfig(vocab_size=VOCAB_SIZE, **CONFIGS[FLAGS.config])
    import keras

    keras.utils.set_random_seed(0)
    model = BertSentenceEmbedder(BertEncoder.from_bert_config(config), "mean", normalize=True)
    record = RunRecord(kind="embedder", task_name="bench", max_seq_length=FLAGS.seq_length,
                       options={"pooling": "mean", "normalize": True, "similarity_scale": 20.0})
    folder = os.path.join(directory, "model")
    hf.write_folder(model, folder, vocab, True, record)
    export = os.path.join(directory, "export")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_scripts", "export_saved_model.py"), "--export_type=embedder",
         f"--init_checkpoint={folder}", f"--export_dir={export}", *FLAGS.export_flags], capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"export_saved_model.py failed: {result.stderr.strip().splitlines()[-1]}")


# ---------------------------------------------------------------------------------------------
# The sides: each loads its model, embeds the agreement texts, then measures on request


def our_embed(directory):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - its ops, before the export loads

    tf.config.threading.set_intra_op_parallelism_threads(threads())
    serve = tf.saved_model.load(os.path.join(directory, "export")).signatures["serving_default"]
    return lambda texts: serve(text_a=tf.constant(texts))["embeddings"].numpy()


def their_embed(directory):
    sys.path.extend(FLAGS.peer_dirs)
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads())
    model = SentenceTransformer(os.path.join(directory, "model"), device="cpu")
    return lambda texts: model.encode(texts, batch_size=len(texts), convert_to_numpy=True, show_progress_bar=False)


def serve_side(side, directory):
    """The side's loop: embed the agreement texts (saved as side.npy), warm up, say "ready", then one
    JSON line of figures per "measure" line until stdin ends."""
    embed = our_embed(directory) if side == "ours" else their_embed(directory)
    texts = bench_text.corpus_sentences()
    np.save(os.path.join(directory, f"{side}.npy"), embed(texts[:AGREEMENT_TEXTS]))
    batches = [[texts[(i * FLAGS.batch_size + j) % len(texts)] for j in range(FLAGS.batch_size)]
               for i in range(FLAGS.batches)]
    for batch in batches[:2]:
        embed(batch)
    for text in texts[:5]:
        embed([text])
    print("ready", flush=True)
    call = 0
    for _ in sys.stdin:
        start = time.perf_counter()
        for batch in batches:
            embed(batch)
        rate = len(batches) * FLAGS.batch_size / (time.perf_counter() - start)
        latencies = []
        for _ in range(FLAGS.latency_calls):
            text = [texts[call % len(texts)]]
            call += 1
            start = time.perf_counter()
            embed(text)
            latencies.append(time.perf_counter() - start)
        print(json.dumps({"rate": rate, "p50": float(np.percentile(latencies, 50)),
                          "p99": float(np.percentile(latencies, 99))}), flush=True)


# ---------------------------------------------------------------------------------------------
# The driving process: no TensorFlow, no torch


class Side:
    def __init__(self, side, directory):
        flag_args = [f"--{name}={FLAGS[name].value}" for name in ("config", "seq_length", "batch_size", "batches",
                                                                   "latency_calls", "threads")]
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), f"--side={side}", f"--side_dir={directory}",
             f"--peer_dirs={','.join(FLAGS.peer_dirs)}", *flag_args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"),
                 "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"), "HF_HUB_OFFLINE": "1",
                 "TOKENIZERS_PARALLELISM": "false"},
        )
        line = self.process.stdout.readline().strip()
        if line != "ready":
            self.process.kill()
            raise SystemExit(f"the {side} side did not start (it said {line!r}; its stderr above)")

    def measure(self):
        self.process.stdin.write("measure\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def peer_found():
    """Whether sentence-transformers and torch are importable from --peer_dirs (looked up in a
    process of their own: this one imports neither)."""
    code = "import importlib.util, sys; sys.path.extend(sys.argv[1:]); " \
           "sys.exit(any(importlib.util.find_spec(m) is None for m in ('sentence_transformers', 'torch')))"
    return subprocess.run([sys.executable, "-c", code, *FLAGS.peer_dirs]).returncode == 0


def prepare(directory):
    """Writes the model folder and our export in a process of its own (TensorFlow stays out of this one)."""
    subprocess.run([sys.executable, os.path.abspath(__file__), "--side=prepare", f"--side_dir={directory}",
                    f"--config={FLAGS.config}", f"--seq_length={FLAGS.seq_length}",
                    f"--export_flags={','.join(FLAGS.export_flags)}"],
                   check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")})


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    if FLAGS.side == "prepare":
        write_model(FLAGS.side_dir)
        return
    if FLAGS.side:
        serve_side(FLAGS.side, FLAGS.side_dir)
        return
    config = CONFIGS[FLAGS.config]
    texts = bench_text.corpus_sentences()
    words = statistics.mean(len(t.split()) for t in texts)
    print(f"config: L={config['num_hidden_layers']} H={config['hidden_size']} A={config['num_attention_heads']} "
          f"I={config['intermediate_size']} vocab={VOCAB_SIZE}, mean pooling + Normalize, max length "
          f"{FLAGS.seq_length}; batch {FLAGS.batch_size}; {threads()} threads each side; text: data/corpus.txt's "
          f"{len(texts)} sentences, {words:.1f} words on average; export flags: "
          f"{' '.join(FLAGS.export_flags) or 'the defaults'}", flush=True)
    with tempfile.TemporaryDirectory() as directory:
        prepare(directory)
        sides = {"ours": Side("ours", directory)}
        if FLAGS.peer_dirs and peer_found():
            sides["theirs"] = Side("theirs", directory)
        else:
            print(f"{PEER_NAME} skipped: not importable from --peer_dirs={','.join(FLAGS.peer_dirs)} "
                  "(pip install --target DIR sentence-transformers torch)", flush=True)
        if "theirs" in sides:
            ours, theirs = (np.load(os.path.join(directory, f"{s}.npy")) for s in ("ours", "theirs"))
            print(f"agreement: max |ours - {PEER_NAME}| = {np.abs(ours - theirs).max():.2e} over "
                  f"{len(ours)} sentences", flush=True)
        figures = {name: [] for name in sides}
        for r in range(FLAGS.rounds):
            for name, side in sides.items():
                figures[name].append(side.measure())
            print(f"round {r + 1}: " + ", ".join(
                f"{name} {figures[name][-1]['rate']:.1f} seq/s, batch-1 p50 {1e3 * figures[name][-1]['p50']:.2f} ms"
                for name in sides), flush=True)
        for side in sides.values():
            side.close()
    median = {name: {k: statistics.median(f[k] for f in rows) for k in ("rate", "p50", "p99")}
              for name, rows in figures.items()}
    labels = {"ours": "bert_tf export (text in)", "theirs": PEER_NAME}
    for name, m in median.items():
        print(f"  {labels[name]:<34}: {m['rate']:9.1f} seq/s at batch {FLAGS.batch_size}; batch 1 p50 "
              f"{1e3 * m['p50']:.2f} ms, p99 {1e3 * m['p99']:.2f} ms (medians of {FLAGS.rounds} rounds)")
    if "theirs" in median:
        o, t = median["ours"], median["theirs"]
        print(f"  ours / {PEER_NAME}: {o['rate'] / t['rate']:.2f}x the throughput, batch-1 p50 "
              f"{t['p50'] / o['p50']:.2f}x as fast")


if __name__ == "__main__":
    app.run(main)
