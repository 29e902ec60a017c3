"""Serving speed on CPU, text in: our exported classifier (fixed length, the request's length, XLA,
int8) beside PyTorch eager and ONNX Runtime (fp32 and dynamic int8) serving the same weights.

    python bench/serving.py [--config=base --seq_length=128 --batch_size=32 --latency_calls=60
                             --throughput_calls=6 --rounds=3 --peer_dirs=DIR[,DIR]
                             --intra_op_threads=0 --inter_op_threads=0]
    python bench/serving.py --smoke  # tiny config, a few calls, no peers (the suite's)
    python bench/serving.py --accuracy_run=RUN_DIR --accuracy_tsv=data/sentiment/dev.tsv

Text: data/corpus.txt's sentences as they are (real English, 7 to 16 words), served one by one
(text_a alone) and as pairs (a sentence and the next one). Batch 1: every call one single or one
pair, cycling through the corpus, so the lengths vary as a service's do (p50 and p99 of the
calls); batch --batch_size: consecutive sentences (or pairs), throughput in sequences/s.

The model: a BertClassifier for sentence pairs, 2 labels, random weights, BERT-Base's shape and
vocab size (data/vocab.txt padded with [unusedN] to 30,522). Ours: `export_classifier` with each
`ServingOptions` (fixed: --pad_to_max_seq_length's fixed shapes; dynamic: the request's length in
buckets of --length_bucket; +xla: the model part jit-compiled; int8: Keras' int8 Dense kernels),
loaded with `tf.saved_model.load` and called through `serving_default` (tokenization and packing in
the graph). "tokenize+pack" is the preprocessing alone (the preprocessor export's default call),
so that its share of the text-in latency shows.

Peers (never dependencies: install them with `pip install --target DIR torch transformers
onnxruntime onnx` and name DIR in --peer_dirs; each is skipped with a message when missing): the
same weights written as a Hugging Face folder (`bert_tf.checkpoints.hf.write_folder`), loaded as
transformers' BertForSequenceClassification, tokenized by its BertTokenizerFast from the same
vocab.txt, padded to the longest in the request (`padding=True`, as its pipelines do), truncated
at --seq_length:
- "torch eager": the model in inference mode;
- "onnxruntime fp32": the model exported by `torch.onnx.export` with dynamic batch and sequence
  axes, run with all graph optimizations (ORT_ENABLE_ALL);
- "onnxruntime int8": that ONNX file through `onnxruntime.quantization.quantize_dynamic`
  (int8 weights, inputs quantized on the fly).
Every path's probabilities are compared with ours at fixed length before timing. The paths take
turns for --rounds rounds, so that a change in the machine's load falls on all alike; the ratios
to ONNX Runtime fp32 are printed.

--accuracy_run: what int8 costs in accuracy instead of the speed. A run_classifier.py output_dir
(single sentences) is exported as export_saved_model.py does, in float and with --quantize=int8,
and both classify --accuracy_tsv (a GLUE SST-2 layout file: a header, then sentence TAB label):
their accuracy, how many predictions differ, and the largest probability difference.
"""

import os
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/serving.py`: bert_tf from this checkout

from bert_tf import BertClassifier, BertConfig, BertEncoder  # noqa: E402
from bert_tf.export.common import ServingOptions  # noqa: E402
from bert_tf.export.preprocessor import export_preprocessor  # noqa: E402
from bert_tf.tasks.classifier.export import export_classifier  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum("config", "base", ["base", "small", "tiny"], "The model's shape.")
flags.DEFINE_integer("seq_length", 128, "The longest packing (truncation), as --seq_length of the export.")
flags.DEFINE_integer("length_bucket", 16, "Our dynamic exports' bucket.")
flags.DEFINE_integer("batch_size", 32, "Batch of the throughput measurement.")
flags.DEFINE_integer("latency_calls", 60, "Timed batch-1 calls of each path per round, singles and pairs together.")
flags.DEFINE_integer("throughput_calls", 6, "Timed batches of each path per round.")
flags.DEFINE_integer("rounds", 3, "The paths take turns this many times.")
flags.DEFINE_list("ours", ["fixed", "dynamic", "dynamic+xla", "int8", "int8+xla"], "Our exports to measure.")
flags.DEFINE_list("peer_dirs", [], "Folders holding torch, transformers, onnxruntime, onnx (appended to sys.path).")
flags.DEFINE_integer("intra_op_threads", 0, "TensorFlow's intra-op threads (0: its default, the cores).")
flags.DEFINE_integer("inter_op_threads", 0, "TensorFlow's inter-op threads (0: its default).")
flags.DEFINE_string("accuracy_run", None, "A run_classifier output_dir: compare its float and int8 exports.")
flags.DEFINE_string("accuracy_tsv", os.path.join(REPO, "data", "sentiment", "dev.tsv"), "sentence TAB label, a header.")
flags.DEFINE_bool("smoke", False, "The tiny config, a few calls, no peers unless --peer_dirs names them.")

CONFIGS = {
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "small": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    "tiny": dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64),
}
OURS = {  # name -> ServingOptions
    "fixed": dict(length_bucket=None),
    "dynamic": dict(jit_compile=False),
    "dynamic+xla": dict(jit_compile=True),
    "int8": dict(quantize="int8", jit_compile=False),
    "int8+xla": dict(quantize="int8", jit_compile=True),
}
VOCAB_SIZE = 30522


def corpus():
    """`(singles, pairs)`: the corpus's sentences as `(text, "")`, and each with the next one."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    return [(s, "") for s in sentences], list(zip(sentences, sentences[1:] + sentences[:1], strict=True))


def vocab_file(directory):
    """data/vocab.txt padded with [unusedN] tokens to BERT's 30,522 (tables of BERT's size)."""
    with open(os.path.join(REPO, "data", "vocab.txt"), encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    tokens += [f"[unused{i}]" for i in range(VOCAB_SIZE - len(tokens))]
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def classifier(config, weights=None):
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    if weights is not None:
        model.set_weights(weights)
    return model


def our_paths(config, weights, vocab, directory):
    """name -> fn(texts_a, texts_b) -> probabilities: each export of ours, loaded back."""
    paths = {}
    for name in FLAGS.ours:
        serving = ServingOptions(**{"length_bucket": FLAGS.length_bucket, **OURS[name]})
        export_dir = os.path.join(directory, name)
        start = time.perf_counter()
        export_classifier(classifier(config, weights), ["0", "1"], "single", True, vocab, True, FLAGS.seq_length,
                          export_dir, serving=serving)
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        print(f"  exported {name} in {time.perf_counter() - start:.1f} s")
        paths[name] = lambda a, b, serve=serve: serve(text_a=tf.constant(a), text_b=tf.constant(b))["probabilities"]
    preprocessor_dir = os.path.join(directory, "preprocessor")
    export_preprocessor(vocab, True, preprocessor_dir, FLAGS.seq_length, length_bucket=FLAGS.length_bucket)
    preprocessor = tf.saved_model.load(preprocessor_dir)
    pack = lambda a, b: preprocessor.bert_pack_inputs(  # noqa: E731
        [preprocessor.tokenize(tf.constant(a)), preprocessor.tokenize(tf.constant(b))],
        seq_length=tf.constant(FLAGS.seq_length),
    )["input_mask"]
    return paths, {"tokenize+pack": pack}


def peer_paths(model, vocab, directory):
    """name -> fn(texts_a, texts_b) -> probabilities for each peer that imports; the skipped
    ones' reasons."""
    sys.path.extend(FLAGS.peer_dirs)
    paths, skipped = {}, []
    try:
        import torch
        import transformers
    except ImportError as e:
        return paths, [f"PyTorch and ONNX Runtime peers skipped: {e} (pip install --target DIR torch transformers "
                       "onnxruntime onnx; --peer_dirs=DIR)"]
    from bert_tf.checkpoints.hf import write_folder

    folder = os.path.join(directory, "hf")
    write_folder(model, folder, vocab, True)
    hf_model = transformers.BertForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = transformers.BertTokenizerFast(vocab, do_lower_case=True)

    def encode(a, b, kind):
        texts = [a] if not any(b) else [a, b]
        return tokenizer(*texts, padding=True, truncation="longest_first", max_length=FLAGS.seq_length,
                         return_tensors=kind)

    def torch_call(a, b):
        with torch.inference_mode():
            return torch.softmax(hf_model(**encode(a, b, "pt")).logits, -1).numpy()

    paths["torch eager"] = torch_call
    try:
        paths.update(onnx_paths(torch, hf_model, encode, directory))
    except ImportError as e:
        skipped.append(f"ONNX Runtime peers skipped: {e} (pip install --target DIR onnxruntime onnx; --peer_dirs=DIR)")
    print(f"  peers: torch {torch.__version__} ({torch.get_num_threads()} threads), transformers "
          f"{transformers.__version__}, BertTokenizerFast")
    return paths, skipped


def onnx_paths(torch, hf_model, encode, directory):
    """ONNX Runtime fp32 and dynamic int8 sessions of `hf_model`, exported with dynamic axes."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = encode(["a sentence"], ["and another"], "pt")
    fp32, int8 = os.path.join(directory, "model.onnx"), os.path.join(directory, "model_int8.onnx")
    torch.onnx.export(
        hf_model, tuple(sample[n] for n in names), fp32, input_names=names, output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "logits"]}, opset_version=17, dynamo=False,
    )
    quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    paths = {}
    for name, path in (("onnxruntime fp32", fp32), ("onnxruntime int8", int8)):
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

        def call(a, b, session=session):
            feed = {n: v.astype(np.int64) for n, v in encode(a, b, "np").items() if n in names}
            logits = session.run(["logits"], feed)[0]
            e = np.exp(logits - logits.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)

        paths[name] = call
    print(f"  onnxruntime {ort.__version__} ({ort.get_device()}), ONNX opset 17, ORT_ENABLE_ALL")
    return paths


def requests(examples, batch):
    """The examples as `(texts_a, texts_b)` requests of `batch` consecutive examples."""
    return [
        ([a for a, _ in examples[i : i + batch]], [b for _, b in examples[i : i + batch]])
        for i in range(0, len(examples) - batch + 1, batch)
    ]


def timed(fn, calls, count, start):
    """Seconds of `count` calls of fn over `calls` (cycling from `start`), each read back."""
    times = []
    for i in range(count):
        a, b = calls[(start + i) % len(calls)]
        begin = time.perf_counter()
        np.asarray(fn(a, b))
        times.append(time.perf_counter() - begin)
    return times


def agreement(paths, reference, sample):
    """The largest probability difference of each path from `reference` on `sample`'s requests."""
    want = [np.asarray(paths[reference](a, b)) for a, b in sample]
    return {
        name: max(float(np.abs(np.asarray(fn(a, b)) - w).max()) for (a, b), w in zip(sample, want, strict=True))
        for name, fn in paths.items()
    }


def one_per_shape(calls, pack):
    """The first of `calls` at each length the dynamic exports pad it to (`pack` gives its
    input_mask at the fixed length): a warm-up that meets every shape XLA compiles."""
    seen = {}
    for a, b in calls:
        longest = int(np.asarray(pack(a, b)).sum(-1).max())
        seen.setdefault(-(-longest // FLAGS.length_bucket), (a, b))
    return list(seen.values())


def measure(paths, ones, batches, warm_up):
    """name -> (p50 ms, p99 ms, sequences/s): the paths taking turns for --rounds rounds, after
    one untimed call of each path on every request of `warm_up`."""
    latency, throughput = {n: [] for n in paths}, {n: [] for n in paths}
    for fn in paths.values():
        timed(fn, warm_up, len(warm_up), 0)
    for round_ in range(FLAGS.rounds):
        for name, fn in paths.items():
            latency[name] += timed(fn, ones, FLAGS.latency_calls, round_ * FLAGS.latency_calls)
            throughput[name] += timed(fn, batches, FLAGS.throughput_calls, round_ * FLAGS.throughput_calls)
    return {
        name: (
            float(np.percentile(latency[name], 50)) * 1000,
            float(np.percentile(latency[name], 99)) * 1000,
            FLAGS.batch_size * len(throughput[name]) / sum(throughput[name]),
        )
        for name in paths
    }


def report(rows, differences):
    print(f"  {'':20} {'p50 ms (b1)':>12} {'p99 ms (b1)':>12} {f'seq/s (b{FLAGS.batch_size})':>13} "
          f"{'max |dp|':>9}")
    for name, (p50, p99, per_second) in rows.items():
        difference = f"{differences[name]:9.1e}" if name in differences else f"{'':9}"
        print(f"  {name:20} {p50:12.1f} {p99:12.1f} {per_second:13.1f} {difference}")
    if "tokenize+pack" in rows:
        for name in ("dynamic", "dynamic+xla"):
            if name in rows:
                print(f"  tokenize+pack: {100 * rows['tokenize+pack'][0] / rows[name][0]:.0f}% of {name}'s p50")
    reference = rows.get("onnxruntime fp32")
    if reference:
        print("  ratios to onnxruntime fp32 (p50: ours / ORT, below 1 is faster; throughput: ours / ORT):")
        for name, (p50, _, per_second) in rows.items():
            print(f"    {name:20} p50 {p50 / reference[0]:5.2f}x   throughput {per_second / reference[2]:5.2f}x")
    int8 = rows.get("onnxruntime int8")
    if int8:
        for name in ("int8", "int8+xla"):
            if name in rows:
                print(f"  {name} against onnxruntime int8: p50 {rows[name][0] / int8[0]:.2f}x, "
                      f"throughput {rows[name][2] / int8[2]:.2f}x")


def int8_accuracy(run, tsv):
    """Dev accuracy of `run`'s float and int8 exports (and how far their probabilities are apart)."""
    from bert_tf.export import exports

    with open(tsv, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    texts, labels = [r[0] for r in rows], [r[1] for r in rows]
    outputs = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, quantize in (("float32", None), ("int8", "int8")):
            export = exports.read("classifier", run, serving=ServingOptions(quantize=quantize))
            export.write(os.path.join(directory, name))
            serve = tf.saved_model.load(os.path.join(directory, name)).signatures["serving_default"]
            outputs[name] = {k: np.asarray(v) for k, v in serve(text_a=tf.constant(texts)).items()}
    for name, out in outputs.items():
        correct = sum(label.decode() == want for label, want in zip(out["label"], labels, strict=True))
        print(f"  {name:8} dev accuracy {correct / len(labels):.4f} ({correct} of {len(labels)})")
    changed = int((outputs["int8"]["label_id"] != outputs["float32"]["label_id"]).sum())
    difference = np.abs(outputs["int8"]["probabilities"] - outputs["float32"]["probabilities"])
    print(f"  int8 against float32: {changed} predictions differ; probabilities differ by {difference.max():.2e} "
          f"at most, {difference.mean():.2e} on average")


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # the export's own info lines
    if FLAGS.accuracy_run:
        print(f"{FLAGS.accuracy_run} on {FLAGS.accuracy_tsv}:")
        return int8_accuracy(FLAGS.accuracy_run, FLAGS.accuracy_tsv)
    if FLAGS.smoke:
        smoke = dict(config="tiny", seq_length=32, latency_calls=4, throughput_calls=1, rounds=1, batch_size=4,
                     ours=["fixed", "dynamic+xla", "int8"])
        for name, value in smoke.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.intra_op_threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads)
    config = BertConfig(vocab_size=VOCAB_SIZE, **CONFIGS[FLAGS.config])
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPU cores, threads intra {FLAGS.intra_op_threads} inter "
          f"{FLAGS.inter_op_threads} (0: default); {FLAGS.config}: L={config.num_hidden_layers} "
          f"H={config.hidden_size} A={config.num_attention_heads} I={config.intermediate_size}, vocab {VOCAB_SIZE}, "
          f"seq_length {FLAGS.seq_length}, length_bucket {FLAGS.length_bucket}")
    model = classifier(config)
    weights = model.get_weights()
    singles, pairs = corpus()
    ones = [x for both in zip(requests(singles, 1), requests(pairs, 1), strict=False) for x in both]
    batches = [x for both in zip(requests(singles, FLAGS.batch_size), requests(pairs, FLAGS.batch_size), strict=False)
               for x in both]
    with tempfile.TemporaryDirectory() as directory:
        vocab = vocab_file(directory)
        paths, preprocessing = our_paths(config, weights, vocab, directory)
        peers, skipped = peer_paths(model, vocab, directory)
        for line in skipped:
            print(f"  {line}")
        paths.update(peers)
        differences = agreement(paths, FLAGS.ours[0], ones[:8] + batches[:2])
        pack = preprocessing["tokenize+pack"]
        warm_up = one_per_shape(ones, pack) + one_per_shape(batches, pack)
        rows = measure({**paths, **preprocessing}, ones, batches, warm_up)
    print(f"batch 1: {FLAGS.rounds * FLAGS.latency_calls} calls per path (singles and pairs in turn), batch "
          f"{FLAGS.batch_size}: {FLAGS.rounds * FLAGS.throughput_calls} batches; {FLAGS.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.1f}; max |dp|: probabilities against {FLAGS.ours[0]}")
    report(rows, differences)


if __name__ == "__main__":
    app.run(main)
