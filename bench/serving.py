"""Serving speed on CPU, text in: our exported classifier (fixed length, the request's length, XLA,
int8) beside PyTorch eager and ONNX Runtime (fp32 and dynamic int8) serving the same weights.

    python bench/serving.py [--config=base --seq_length=128 --batch_size=32 --latency_calls=60
                             --throughput_calls=6 --rounds=3 --peer_dirs=DIR[,DIR]
                             --intra_op_threads=0 --inter_op_threads=0]
    python bench/serving.py --smoke  # tiny config, a few calls, no peers (the suite's)
    python bench/serving.py --save_defaults  # this machine's XLA and oneDNN choices for float exports, saved

Text: data/corpus.txt's sentences as they are (real English, 7 to 16 words), served one by one
(text_a alone) and as pairs (a sentence and the next one). Batch 1: every call one single or one
pair, cycling through the corpus, so the lengths vary as a service's do (p50 and p99 of the
calls); batch --batch_size: consecutive sentences (or pairs), throughput in sequences/s.

The model: a BertClassifier for sentence pairs, 2 labels, random weights, BERT-Base's shape and
vocab size (data/vocab.txt padded with [unusedN] to 30,522). Ours: `export_classifier` with each
`ServingOptions` (fixed: --pad_to_max_seq_length's fixed shapes; dynamic: the request's length in
buckets of --length_bucket, default each export's own (1 without XLA, 8 with), and a batch's padding
skipped (the default without XLA); dynamic_plain: the same without skipping it; +xla: the model part
jit-compiled; int8: Keras' int8 Dense kernels; bf16: bfloat16 weights and products,
`mixed_precision="bf16"`), loaded with `tf.saved_model.load` and called through
`serving_default` (tokenization and packing in the graph). "tokenize+pack" is the preprocessing
alone (the preprocessor export's tokenize and bert_pack_inputs, called in one graph, as the text-in
exports tokenize and pack inside theirs), so that its share of the text-in latency shows.

Peers (never dependencies: `pip install --target DIR torch transformers onnxruntime onnx`, then
--peer_dirs=DIR; skipped with a message when missing): the same weights as a Hugging Face folder
(`write_folder`), loaded as transformers' BertForSequenceClassification, tokenized by its
BertTokenizerFast from the same vocab.txt, padded to the request's longest (as its pipelines do):
"torch eager" (inference mode); "onnxruntime fp32" (`torch.onnx.export` with dynamic batch and
sequence axes, ORT_ENABLE_ALL); "onnxruntime int8" (that file through `quantize_dynamic`). Every
path's probabilities are compared with ours at fixed length before timing.

"+frozen": the same export (those without XLA, which takes no oneDNN kernel) loaded by a process
of its own started with TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1, which keeps oneDNN's weight layouts
(`bert_tf.export.common.model_runner` says how and when that is safe); --nofrozen_weights leaves
it out.

Each side (ours; ours+frozen; torch eager; onnxruntime fp32; onnxruntime int8) runs in its own
process (this script again, with --side), so that the thread pools of TensorFlow, PyTorch and
ONNX Runtime never compete: in one process PyTorch's batch-1 p50 came out 10-25x its figure alone. Every side gets
--intra_op_threads threads (0: the cores) and --inter_op_threads (0: the library's default), set as
each library documents (tf.config.threading, torch.set_num_threads, ORT SessionOptions). The sides
stay loaded and take turns for --rounds rounds (the idle ones wait on a pipe), each timing the same
requests, so that a change in the machine's load falls on all alike. Yet PyTorch's OpenMP threads
suffer most on a machine loaded past its cores (load 7 on 2 cores: batch-1 p50 0.3-1.6 s at 2 threads,
0.10 s at 1): read its figures with the printed load, or compare all sides at --intra_op_threads=1.

The last line gives each side's peak resident memory (its process's, all of its paths' exports
or models loaded together): "ours" also built and exported them, while "ours_frozen" only loads
and serves, so with --ours=NAME alone the latter is what a serving process of that export takes
when it keeps oneDNN's layouts.

--save_defaults measures our float export at the request's length without XLA and with it
("dynamic", "dynamic+xla": --ours is those two unless given) and saves XLA on for float exports on
this machine (`serving_jit_compile` in bert_tf.training.speed's per-machine file,
$BERT_TF_SPEED_FILE or ~/.cache/bert_tf/speed_defaults.json, keeping the fine-tuning choice of
bench/finetuning.py --save_defaults) when XLA won: the geometric mean of its batch-1 p50 gain (p50
without / with) and its batch throughput gain (with / without) is above 1. export_saved_model.py
then compiles float exports' serving function where --serving_jit_compile is not given (int8
exports always are).

What int8 and bf16 cost in accuracy: bench/serving_accuracy.py.
"""

import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import app, flags, logging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/serving.py`: bert_tf from this checkout

import bench_text  # noqa: E402  (bench/, this script's folder)

FLAGS = flags.FLAGS
flags.DEFINE_enum("config", "base", ["base", "small", "tiny"], "The model's shape.")
flags.DEFINE_integer("seq_length", 128, "The longest packing (truncation), as --seq_length of the export.")
flags.DEFINE_integer("length_bucket", None, "Our dynamic exports' bucket (default: each export's own, "
                     "bert_tf.training.settings.default_length_bucket: 1 without XLA, 8 with it).")
flags.register_validator("length_bucket", lambda v: v is None or v >= 1, "must be a positive integer")
flags.DEFINE_integer("batch_size", 32, "Batch of the throughput measurement.")
flags.DEFINE_integer("latency_calls", 60, "Timed batch-1 calls of each path per round, singles and pairs together.")
flags.DEFINE_integer("throughput_calls", 6, "Timed batches of each path per round.")
flags.DEFINE_integer("rounds", 3, "The paths take turns this many times.")
flags.DEFINE_list("ours", ["fixed", "dynamic", "dynamic+xla", "int8", "int8+xla"], "Our exports to measure.")
flags.DEFINE_list("peer_dirs", [], "Folders holding torch, transformers, onnxruntime, onnx (appended to sys.path).")
flags.DEFINE_integer("intra_op_threads", 0, "Every side's intra-op threads (0: the machine's cores).")
flags.DEFINE_integer("inter_op_threads", 0, "Every side's inter-op threads (0: each library's default).")
flags.DEFINE_bool("frozen_weights", True, "Also serve our exports without XLA from a process started with "
                  "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 (paths NAME+frozen).")
flags.DEFINE_bool("smoke", False, "The tiny config, a few calls, no peers unless --peer_dirs names them.")
flags.DEFINE_bool("kernels", False, "Also serve our float exports without XLA from two processes of their own, "
                  "started with TF_ENABLE_ONEDNN_OPTS=1 and =0 (paths NAME+onednn, NAME+eigen); --save_defaults "
                  "turns it on and saves the faster for serving.")
flags.DEFINE_bool("save_defaults", False, "Save whether XLA made our float export faster here (--ours: dynamic and "
                  "dynamic+xla unless given) as this machine's serving_jit_compile default (bert_tf.training.speed).")
flags.DEFINE_enum("side", None, ["ours", "ours_frozen", "ours_onednn", "ours_eigen", "torch", "ort_fp32", "ort_int8"],
                  "Internal: serve this side's paths to the driving process over stdin/stdout.")
flags.DEFINE_string("side_dir", None, "Internal: the folder the sides share (vocab, exports, HF folder, ONNX files).")

CONFIGS = {
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "small": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    "tiny": dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64),
}
OURS = {  # name -> ServingOptions, each with its XLA choice given (frozen_names reads it)
    "fixed": dict(length_bucket=None, jit_compile=False), "dynamic": dict(jit_compile=False),
    "dynamic_plain": dict(jit_compile=False, skip_padding=False), "dynamic+xla": dict(jit_compile=True),
    "int8": dict(quantize="int8", jit_compile=False), "int8+xla": dict(quantize="int8", jit_compile=True),
    "bf16": dict(jit_compile=False, mixed_precision="bf16"),  # bfloat16 weights and products
}
XLA_PAIR = ("dynamic", "dynamic+xla")  # --save_defaults: our float export without XLA, with it
VOCAB_SIZE = 30522
# bert_tf.export.common.FROZEN_WEIGHTS_ENV, not imported: this driving process loads no TensorFlow.
FROZEN_WEIGHTS_ENV = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"
NOT_PROBABILITIES = {"tokenize+pack"}  # timed, but gives the input_mask
# --kernels: TensorFlow's variable choosing oneDNN's kernels or Eigen's (read as it loads), and the
# suffix of the paths served by a side started with each value.
ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
KERNEL_SUFFIXES = {"1": "+onednn", "0": "+eigen"}


def workload():
    """`(ones, batches)`: batch-1 and --batch_size requests of data/corpus.txt's sentences, singles
    (`(text, "")`) and pairs (each with the next one) in turn."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    singles, pairs = [(s, "") for s in sentences], list(zip(sentences, sentences[1:] + sentences[:1], strict=True))
    ones = [x for both in zip(requests(singles, 1), requests(pairs, 1), strict=False) for x in both]
    batches = [x for both in zip(requests(singles, FLAGS.batch_size), requests(pairs, FLAGS.batch_size), strict=False)
               for x in both]
    return ones, batches


def threads():
    return FLAGS.intra_op_threads or os.cpu_count()


def peers_found():
    """`(torch and transformers, onnxruntime and onnx)` importable from --peer_dirs or the environment;
    looked up without importing them, so that no process but their own loads them."""
    sys.path.extend(d for d in FLAGS.peer_dirs if d not in sys.path)
    found = {m: importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "onnxruntime", "onnx")}
    return found["torch"] and found["transformers"], found["torch"] and found["onnxruntime"] and found["onnx"]


def our_side(directory):
    """Our exports and the preprocessor's tokenize+pack, loaded as a user would: name -> fn(a, b),
    lines to print, and the warm-up requests (one per shape the dynamic exports meet). Also writes
    the Hugging Face folder of the same weights when the PyTorch peer will run."""
    tf = tensorflow_with_threads()  # in this side's process only: the peers' processes never load TensorFlow

    from bert_tf import BertClassifier, BertConfig, BertEncoder
    from bert_tf.export.common import AUTO, DEFAULT_SERVING, ServingOptions
    from bert_tf.export.preprocessor import export_preprocessor
    from bert_tf.tasks.classifier.export import export_classifier

    config = BertConfig(vocab_size=VOCAB_SIZE, **CONFIGS[FLAGS.config])
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    # Biases and LayerNorms off their initial zeros and ones, as a trained model's: a zero bias is
    # folded away, and TensorFlow then takes another product kernel than a trained model meets.
    rng = np.random.default_rng(0)
    model.set_weights([w + 0.02 * rng.standard_normal(w.shape).astype(w.dtype) if w.ndim == 1 else w
                       for w in model.get_weights()])
    weights = model.get_weights()
    vocab = os.path.join(directory, "vocab.txt")
    paths, lines = {}, [f"ours: TensorFlow {tf.__version__}, threads intra {threads()} inter {FLAGS.inter_op_threads}"]
    bucket = AUTO if FLAGS.length_bucket is None else FLAGS.length_bucket  # AUTO: each export's default
    for name in FLAGS.ours:
        serving = ServingOptions(**{"length_bucket": bucket, **OURS[name]})
        export_dir = os.path.join(directory, name)
        start = time.perf_counter()
        copy = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)  # int8 quantizes it in place
        copy.set_weights(weights)
        export_classifier(copy, ["0", "1"], "single", True, vocab, True, FLAGS.seq_length, export_dir, serving=serving)
        paths[name] = served_probabilities(tf, export_dir)
        lines.append(f"exported {name} in {time.perf_counter() - start:.1f} s")
    preprocessor_dir = os.path.join(directory, "preprocessor")
    export_preprocessor(vocab, True, preprocessor_dir, FLAGS.seq_length,
                        length_bucket=DEFAULT_SERVING.length_bucket if bucket == AUTO else bucket)
    preprocessor = tf.saved_model.load(preprocessor_dir)
    # One graph, as the text-in exports tokenize and pack inside theirs: the loaded functions called
    # one by one from Python took 2.3 ms where their graph takes about 1.
    tokenize_and_pack = tf.function(lambda a, b: preprocessor.bert_pack_inputs(
        [preprocessor.tokenize(a), preprocessor.tokenize(b)], seq_length=tf.constant(FLAGS.seq_length),
    )["input_mask"], input_signature=[tf.TensorSpec([None], tf.string)] * 2)
    paths["tokenize+pack"] = lambda a, b: tokenize_and_pack(tf.constant(a), tf.constant(b))
    if peers_found()[0]:
        from bert_tf.checkpoints.hf import write_folder

        write_folder(model, os.path.join(directory, "hf"), vocab, True)
    ones, batches = workload()
    pack = paths["tokenize+pack"]
    return paths, lines, one_per_shape(ones, pack) + one_per_shape(batches, pack)


def tensorflow_with_threads():
    """TensorFlow, its threads set from the flags (before its runtime starts), in a side's process."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads())
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads)
    return tf


def served_probabilities(tf, export_dir):
    """fn(a, b) -> the probabilities of the loaded export's serving_default on texts a, b."""
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    return lambda a, b: serve(text_a=tf.constant(a), text_b=tf.constant(b))["probabilities"]


def frozen_side(directory):
    """Our exports without XLA as our side wrote them, loaded in this process (started with
    FROZEN_WEIGHTS_ENV=1): NAME+frozen -> fn(a, b)."""
    import tensorflow_text  # noqa: F401 - the exports' tokenizer ops

    tf = tensorflow_with_threads()
    paths = {f"{name}+frozen": served_probabilities(tf, os.path.join(directory, name)) for name in frozen_names()}
    return paths, [f"ours+frozen: the same exports, {FROZEN_WEIGHTS_ENV}={os.environ.get(FROZEN_WEIGHTS_ENV)}"], []


def kernels_side(directory):
    """Our float exports without XLA as our side wrote them, loaded in this process (started with
    TF_ENABLE_ONEDNN_OPTS set: 1 or 0): NAME+onednn or NAME+eigen -> fn(a, b)."""
    import tensorflow_text  # noqa: F401 - the exports' tokenizer ops

    tf = tensorflow_with_threads()
    suffix = KERNEL_SUFFIXES[os.environ[ONEDNN_ENV]]
    paths = {f"{name}{suffix}": served_probabilities(tf, os.path.join(directory, name)) for name in kernel_names()}
    return paths, [f"ours{suffix}: the same exports, {ONEDNN_ENV}={os.environ[ONEDNN_ENV]}"], []


def kernel_names():
    """--ours in float32 without XLA (XLA runs no oneDNN kernel), when --kernels."""
    return [name for name in FLAGS.ours if FLAGS.kernels and not OURS[name]["jit_compile"]
            and not OURS[name].get("quantize") and not OURS[name].get("mixed_precision")]


def frozen_names():
    """--ours without XLA (XLA runs no oneDNN kernel), when --frozen_weights."""
    return [name for name in FLAGS.ours if FLAGS.frozen_weights and not OURS[name]["jit_compile"]]


def hf_encode(directory):
    """fn(a, b, kind) -> transformers' encoding of a request, padded to its longest, cut at --seq_length."""
    import transformers

    tokenizer = transformers.BertTokenizerFast(os.path.join(directory, "vocab.txt"), do_lower_case=True)

    def encode(a, b, kind):
        texts = [a] if not any(b) else [a, b]
        return tokenizer(*texts, padding=True, truncation="longest_first", max_length=FLAGS.seq_length,
                         return_tensors=kind)

    return encode


def torch_side(directory):
    """PyTorch eager on the Hugging Face folder our side wrote; exports it to ONNX (dynamic batch and
    sequence axes) for the ONNX Runtime sides when they will run."""
    import torch
    import transformers

    torch.set_num_threads(threads())
    if FLAGS.inter_op_threads:
        torch.set_num_interop_threads(FLAGS.inter_op_threads)
    hf_model = transformers.BertForSequenceClassification.from_pretrained(os.path.join(directory, "hf")).eval()
    encode = hf_encode(directory)

    def call(a, b):
        with torch.inference_mode():
            return torch.softmax(hf_model(**encode(a, b, "pt")).logits, -1).numpy()

    lines = [f"torch eager: torch {torch.__version__} ({torch.get_num_threads()} threads, "
             f"{torch.get_num_interop_threads()} inter-op), transformers {transformers.__version__}, BertTokenizerFast"]
    if peers_found()[1]:
        names = ["input_ids", "attention_mask", "token_type_ids"]
        sample = encode(["a sentence"], ["and another"], "pt")
        torch.onnx.export(
            hf_model, tuple(sample[n] for n in names), os.path.join(directory, "model.onnx"), input_names=names,
            output_names=["logits"], dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "logits"]},
            opset_version=17, dynamo=False,
        )
    return {"torch eager": call}, lines, []


def ort_side(directory, int8):
    """ONNX Runtime on the ONNX file the PyTorch side exported (`int8`: through quantize_dynamic first)."""
    import onnxruntime as ort

    path = os.path.join(directory, "model.onnx")
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(path, os.path.join(directory, "model_int8.onnx"), weight_type=QuantType.QInt8)
        path = os.path.join(directory, "model_int8.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads()
    options.inter_op_num_threads = FLAGS.inter_op_threads  # 0: its default
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    encode, names = hf_encode(directory), {i.name for i in session.get_inputs()}

    def call(a, b):
        feed = {n: v.astype(np.int64) for n, v in encode(a, b, "np").items() if n in names}
        logits = session.run(["logits"], feed)[0]
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    name = f"onnxruntime {'int8' if int8 else 'fp32'}"
    return {name: call}, [f"{name}: onnxruntime {ort.__version__} ({ort.get_device()}), ONNX opset 17, "
                          f"ORT_ENABLE_ALL, intra {threads()} inter {FLAGS.inter_op_threads} threads"], []


def serve_side():
    """--side: load the side's paths, then answer the driver's commands (a JSON line each way)
    until it closes stdin."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the libraries print goes to stderr, not into the protocol
    peers_found()  # puts --peer_dirs on sys.path
    build = {"ours": our_side, "ours_frozen": frozen_side, "ours_onednn": kernels_side, "ours_eigen": kernels_side,
             "torch": torch_side,
             "ort_fp32": lambda d: ort_side(d, False), "ort_int8": lambda d: ort_side(d, True)}[FLAGS.side]
    paths, lines, warm_up = build(FLAGS.side_dir)
    protocol.write(json.dumps({"lines": lines, "warm_up": warm_up}) + "\n")
    protocol.flush()
    ones, batches = workload()
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "agree":
            reply = {name: [np.asarray(fn(a, b)).tolist() for a, b in command["requests"]]
                     for name, fn in paths.items() if name not in NOT_PROBABILITIES}
        elif command["op"] == "memory":  # this process's peak resident memory so far (Linux: KiB)
            reply = {"peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
        elif command["op"] == "warm":  # untimed: the first call of each shape (XLA compiles, caches fill)
            reply = {name: timed(fn, command["requests"], len(command["requests"]), 0) for name, fn in paths.items()}
        else:  # "round": every path's batch-1 and batch calls of round `round`, one path after the other
            r = command["round"]
            reply = {name: (timed(fn, ones, FLAGS.latency_calls, r * FLAGS.latency_calls),
                            timed(fn, batches, FLAGS.throughput_calls, r * FLAGS.throughput_calls))
                     for name, fn in paths.items()}
        protocol.write(json.dumps(reply) + "\n")
        protocol.flush()


class Side:
    """A side's process (this script again, with this run's flags and --side) and its pipes."""

    def __init__(self, side, directory, env=None):
        argv = [a for a in sys.argv[1:] if not a.startswith("--side")]
        self.side, self.process = side, subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *argv, f"--side={side}", f"--side_dir={directory}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        self.ready = self.ask()

    def ask(self, **command):
        """The side's answer to `command` (none: its first line, once it has loaded)."""
        if command:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.side} side's process ended with {self.process.wait()} (its stderr above)")
        return json.loads(line)


def requests(examples, batch):
    """The examples as `(texts_a, texts_b)` requests of `batch` consecutive examples."""
    starts = range(0, len(examples) - batch + 1, batch)
    return [([a for a, _ in examples[i : i + batch]], [b for _, b in examples[i : i + batch]]) for i in starts]


def timed(fn, calls, count, start):
    """Seconds of `count` calls of fn over `calls` (cycling from `start`), each read back."""
    times = []
    for i in range(count):
        a, b = calls[(start + i) % len(calls)]
        begin = time.perf_counter()
        np.asarray(fn(a, b))
        times.append(time.perf_counter() - begin)
    return times


def one_per_shape(calls, pack):
    """The first of `calls` at each of their longest lengths (`pack` gives its input_mask at the
    fixed length): a warm-up that meets every shape XLA compiles, whatever an export's bucket."""
    seen = {}
    for a, b in calls:
        seen.setdefault(int(np.asarray(pack(a, b)).sum(-1).max()), (a, b))
    return list(seen.values())


def start_sides(directory):
    """The sides' processes, ours first (it writes what the peers load), and the skipped peers' reasons."""
    torch_found, onnx_found = peers_found()
    sides, skipped = [Side("ours", directory)], []  # ours first: the others load what it wrote
    if frozen_names():
        sides.append(Side("ours_frozen", directory, env={FROZEN_WEIGHTS_ENV: "1"}))
    if kernel_names():
        sides += [Side("ours_onednn", directory, env={ONEDNN_ENV: "1"}),
                  Side("ours_eigen", directory, env={ONEDNN_ENV: "0"})]
    if not torch_found:
        return sides, [f"PyTorch and ONNX Runtime peers skipped: torch or transformers not found in {FLAGS.peer_dirs} "
                       "(pip install --target DIR torch transformers onnxruntime onnx; --peer_dirs=DIR)"]
    sides.append(Side("torch", directory))
    if onnx_found:
        sides += [Side("ort_fp32", directory), Side("ort_int8", directory)]
    else:
        skipped.append("ONNX Runtime peers skipped: onnxruntime or onnx not found (pip install --target DIR "
                       "onnxruntime onnx; --peer_dirs=DIR)")
    return sides, skipped


def agreement(sides, sample):
    """The largest probability difference of each path from ours at --ours[0] on `sample`'s requests."""
    answers = {name: got for side in sides for name, got in side.ask(op="agree", requests=sample).items()}
    want = [np.asarray(w) for w in answers[FLAGS.ours[0]]]
    return {name: max(float(np.abs(np.asarray(g) - w).max()) for g, w in zip(got, want, strict=True))
            for name, got in answers.items()}


def measure(sides, warm_up):
    """name -> (p50 ms, p99 ms, sequences/s): the sides taking turns for --rounds rounds (within ours,
    its paths one after the other), after one untimed call of each path on every request of `warm_up`."""
    latency, throughput = {}, {}
    for side in sides:
        side.ask(op="warm", requests=warm_up)
    for round_ in range(FLAGS.rounds):
        for side in sides:
            for name, (ones, batches) in side.ask(op="round", round=round_).items():
                latency.setdefault(name, []).extend(ones)
                throughput.setdefault(name, []).extend(batches)
    return {
        name: (
            float(np.percentile(latency[name], 50)) * 1000,
            float(np.percentile(latency[name], 99)) * 1000,
            FLAGS.batch_size * len(throughput[name]) / sum(throughput[name]),
        )
        for name in latency
    }


def report(rows, differences):
    print(f"  {'':20} {'p50 ms (b1)':>12} {'p99 ms (b1)':>12} {f'seq/s (b{FLAGS.batch_size})':>13} "
          f"{'max |dp|':>9}")
    for name, (p50, p99, per_second) in rows.items():
        difference = f"{differences[name]:9.1e}" if name in differences else f"{'':9}"
        print(f"  {name:20} {p50:12.1f} {p99:12.1f} {per_second:13.1f} {difference}")
    for name in ("dynamic", "dynamic+xla"):
        if name in rows and "tokenize+pack" in rows:
            print(f"  tokenize+pack: {100 * rows['tokenize+pack'][0] / rows[name][0]:.0f}% of {name}'s p50")
    reference = rows.get("onnxruntime fp32")
    if reference:
        print("  ratios to onnxruntime fp32 (p50: ours / ORT, below 1 is faster; throughput: ours / ORT):")
        for name, (p50, _, per_second) in rows.items():
            print(f"    {name:20} p50 {p50 / reference[0]:5.2f}x   throughput {per_second / reference[2]:5.2f}x")
    for name in ("int8", "int8+xla") if "onnxruntime int8" in rows else ():
        if name in rows:
            int8 = rows["onnxruntime int8"]
            print(f"  {name} against onnxruntime int8: p50 {rows[name][0] / int8[0]:.2f}x, "
                  f"throughput {rows[name][2] / int8[2]:.2f}x")


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # the export's own info lines
    if FLAGS.smoke:  # the sides start with --smoke too, and so read the same values
        smoke = dict(config="tiny", seq_length=32, latency_calls=4, throughput_calls=1, rounds=1, batch_size=4,
                     ours=["fixed", "dynamic+xla", "int8"])
        for name, value in smoke.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    if FLAGS.save_defaults and not FLAGS["ours"].present:
        FLAGS.ours = list(XLA_PAIR)
    if FLAGS.save_defaults and not FLAGS["kernels"].present:
        FLAGS.kernels = True
    if FLAGS.save_defaults and not set(XLA_PAIR) <= set(FLAGS.ours):
        raise app.UsageError(f"--save_defaults measures {' and '.join(XLA_PAIR)}: --ours={','.join(FLAGS.ours)} "
                             "lacks one")
    if FLAGS.side:
        return serve_side()
    shape = CONFIGS[FLAGS.config]
    print(f"{os.cpu_count()} CPU cores, every side in its own process with intra-op threads {threads()}, inter-op "
          f"{FLAGS.inter_op_threads} (0: the library's default); {FLAGS.config}: L={shape['num_hidden_layers']} "
          f"H={shape['hidden_size']} A={shape['num_attention_heads']} I={shape['intermediate_size']}, vocab "
          f"{VOCAB_SIZE}, seq_length {FLAGS.seq_length}, length_bucket "
          f"{'of each export (1 without XLA, 8 with it)' if FLAGS.length_bucket is None else FLAGS.length_bucket}")
    ones, batches = workload()
    with tempfile.TemporaryDirectory() as directory:
        bench_text.padded_vocab(directory, VOCAB_SIZE)
        sides, skipped = start_sides(directory)
        try:
            for line in [*(line for side in sides for line in side.ready["lines"]), *skipped]:
                print(f"  {line}")
            differences = agreement(sides, ones[:8] + batches[:2])
            rows = measure(sides, sides[0].ready["warm_up"])
            memory = {side.side: side.ask(op="memory")["peak_gib"] for side in sides}
        finally:
            for side in sides:
                side.process.stdin.close()
                side.process.wait()
    print(f"batch 1: {FLAGS.rounds * FLAGS.latency_calls} calls per path (singles and pairs in turn), batch "
          f"{FLAGS.batch_size}: {FLAGS.rounds * FLAGS.throughput_calls} batches; {FLAGS.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}; max |dp|: probabilities against {FLAGS.ours[0]}")
    report(rows, differences)
    print("  peak memory per side (its paths' exports or models loaded together): "
          + ", ".join(f"{side} {gib:.2f} GiB" for side, gib in memory.items()))
    if FLAGS.save_defaults:
        save_defaults(rows)


def gains(off, on):
    """`(p50 gain, throughput gain, their geometric mean)` of the setting `on` over `off` (rows of
    `measure`: p50 ms, p99 ms, sequences/s), each above 1 where `on` is faster. A service is bound
    by one-request latency or by batch throughput; the geometric mean weighs the two relative gains
    alike (10% better on one and 10% worse on the other cancel), so that neither use is sacrificed
    for the other."""
    latency, throughput = off[0] / on[0], on[2] / off[2]
    return latency, throughput, math.sqrt(latency * throughput)


def save_defaults(rows):
    """Saves XLA's measured choice for float exports on this machine (`speed.save_measured`): on
    when the geometric mean of its batch-1 p50 gain and its batch throughput gain is above 1."""
    from bert_tf.training import speed  # after the measurement: TensorFlow loads in this process only now

    # A tie keeps XLA's built-in off: it compiles a program per request shape, a cost the
    # measurement's warm-up leaves out.
    latency, throughput, mean = gains(*(rows[name] for name in XLA_PAIR))
    figures = {"p50_speedup": latency, "throughput_speedup": throughput}
    path = speed.save_measured(mean > 1, mean, name="serving_jit_compile", figures=figures)
    print(f"XLA on / off for our float export ({XLA_PAIR[1]} / {XLA_PAIR[0]}): batch-1 p50 {latency:.3f}x, batch "
          f"{FLAGS.batch_size} throughput {throughput:.3f}x, geometric mean {mean:.3f}x (XLA on where above 1)")
    print(f"saved serving_jit_compile={mean > 1} for this machine to {path}; export_saved_model.py uses it for "
          "float exports where --serving_jit_compile is not given", flush=True)
    # oneDNN on / off for the same export without XLA, by the same rule: each side a process of its own.
    name = XLA_PAIR[0]
    if f"{name}+onednn" in rows and f"{name}+eigen" in rows:
        latency, throughput, mean = gains(rows[f"{name}+eigen"], rows[f"{name}+onednn"])
        figures = {"p50_speedup": latency, "throughput_speedup": throughput}
        path = speed.save_measured(mean > 1, mean, name="onednn_serving", figures=figures)
        print(f"oneDNN on / off for our float export ({name}): batch-1 p50 {latency:.3f}x, batch {FLAGS.batch_size} "
              f"throughput {throughput:.3f}x, geometric mean {mean:.3f}x; saved onednn_serving={mean > 1} to {path}: "
              "export_saved_model.py's log line names it for the processes that serve exports", flush=True)


if __name__ == "__main__":
    app.run(main)
