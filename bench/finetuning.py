"""Fine-tuning throughput on real-length text: run_classifier's loop at its default flags (batches
cut to their longest row) and at fixed padding, XLA off and on, beside Hugging Face transformers on
PyTorch (and keras-hub when installed); LoRA beside full fine-tuning.

    python bench/finetuning.py [--num_layers=4 --hidden_size=256 --num_heads=4 --intermediate_size=1024
                                --seq_length=128 --batch_size=32 --steps=30 --rounds=3]
                               [--text=single,pairs] [--peer_path=DIR] [--lora_rank=8]
                               [--threads=N --inter_op_threads=N]
    python bench/finetuning.py --save_defaults [--rounds=2 --steps=20]  # this machine's jit_compile and
        oneDNN choices for training and prediction (each setting in a process of its own, in turn)
    python bench/finetuning.py --profile [--text=single --peer_path=DIR]  # where a step's time goes, both sides
    python bench/finetuning.py --smoke [--lora_rank=4]  # tiny config, a few steps (the suite's); with
        --save_defaults, XLA on for the configuration its choice reads only (dynamic, full fine-tuning)

Text (`--text`): "single", data/corpus.txt's sentences as they are, one per example; "pairs", two
consecutive sentences. The vocab: data/vocab.txt padded with [unusedN] tokens to --vocab_size (the
tables and embeddings have BERT-Base's size). Every side starts from the same text and vocab.txt:
- ours: `Trainer` + `ClassifierTask` exactly as run_classifier.py runs them (the in-graph tokenizer
  and packer in a tf.data map, the original's AdamW with global-norm clipping), fp32; "dynamic":
  batches cut to their longest row rounded up to --length_bucket and, without XLA, their padding
  skipped (run_classifier's defaults on CPU); "dynamic_plain": cut, not skipped; "fixed": padded
  to --seq_length (`--pad_to_max_seq_length`, the original's shapes); each with XLA off and on.
  "default" is dynamic with `--jit_compile` left unset, which `bert_tf.training.speed` resolves per
  platform and machine: the XLA on/off ratios printed here are the measurement behind its CPU
  choice, and `--save_defaults` (XLA off and on, dynamic padding, unless --xla/--padding are given)
  saves that choice for this machine, where the scripts find it ($BERT_TF_SPEED_FILE, default
  ~/.cache/bert_tf/speed_defaults.json; bench/serving.py --save_defaults's choice for float exports
  is kept beside it).
- PyTorch: transformers' BertForSequenceClassification of the same shape, eager, as its Trainer
  runs it, each batch padded to its longest row by DataCollatorWithPadding ("dynamic") or to
  --seq_length ("fixed"); bench/finetuning_pytorch_peer.py says the rest. It runs in a process of
  its own (TensorFlow's and torch's thread pools in one process compete for the cores), a model
  and step for each text and padding, taking its turn in each round; both sides use --threads
  threads, one at a time (its OpenMP threads wait passively unless OMP_WAIT_POLICY says otherwise:
  see `peer_process.start`).
  transformers and torch are no dependencies: install them into a folder of their own
  (`pip install --target DIR transformers torch`) and pass `--peer_path=DIR`; without them the peer
  is skipped with a message.
- keras-hub (when importable): `BertTextClassifier` with its preprocessor attached, `fit` on string
  batches, Keras AdamW, jit_compile on (its default); its preprocessor pads to --seq_length.
The configurations take turns for `--rounds` rounds; medians and the fastest rounds are printed,
and the ratios of both.

With --profile there are no rounds: our step (the first --text, dynamic padding, XLA off, where
TensorFlow's ops can be told apart) runs under TensorFlow's profiler and the PyTorch peer's under
torch's, and each side's op time per step is printed by category (bench/step_profile.py): the
forward and backward passes' matrix products and other ops, the embeddings' gradient, the clip and
the optimizer's update. TensorFlow runs two ops at once by default, and an op beside another counts
its wait for a core: `--inter_op_threads=1` runs ours one op at a time, whose op times then add up
to its step.

An AVX2-only CPU, approximated on an AVX-512 one: hold every library's kernels to AVX2 before it
starts, with ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN: ours and torch's), XLA_FLAGS=--xla_cpu_max_isa=AVX2,
ATEN_CPU_CAPABILITY=avx2 and MKL_ENABLE_INSTRUCTIONS=AVX2 (torch), and give TF_ENABLE_ONEDNN_OPTS
yourself (TensorFlow still sees AVX-512). TensorFlow's Eigen kernels are built for AVX on either
kind (its startup line lists what it was not built for), and torch's MKL products run its AVX2 code
on AMD CPUs either way.

With --lora_rank=R our loop also runs with LoRA (`run_classifier.py --lora_rank=R`: adapters on
the encoder's attention and feed-forward layers, the rest frozen) in the same rounds (the first
--text, dynamic padding), and both print their optimizer state (AdamW's variables: count, numbers
and bytes, read from the optimizer) and their trainable parameters. Both are then trained from the
same random initialisation on a separable task of the same model size (`--accuracy_steps` steps;
one corpus sentence with a marker word put in: "winter" for label 1, "market" for 0; dev sentences
are not among the training ones) and their dev accuracy printed: full fine-tuning at
--learning_rate, LoRA at --lora_learning_rate (LoRA takes a larger rate, as in the paper's runs).
"""

import contextlib
import functools
import inspect
import json
import os
import random
import statistics
import sys
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/finetuning.py`: bert_tf from this checkout

import bench_text  # noqa: E402  (bench/, this script's folder)
import model_shape  # noqa: E402
import peer_process  # noqa: E402

from bert_tf.data.lengths import cut_padding  # noqa: E402
from bert_tf.models.bert_encoder import INPUT_NAMES  # noqa: E402
from bert_tf.tasks.classifier.inputs import encode_examples  # noqa: E402
from bert_tf.tasks.classifier.processors import InputExample  # noqa: E402
from bert_tf.tasks.classifier.task import ClassifierTask  # noqa: E402
from bert_tf.training import settings as settings_module  # noqa: E402
from bert_tf.training import speed  # noqa: E402
from bert_tf.training.trainer import Trainer, TrainingSettings  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("seq_length", 128, "max_seq_length: the fixed runs' length, every run's maximum.")
flags.DEFINE_integer("batch_size", 32, "Global batch.")
flags.DEFINE_integer("steps", 30, "Measured steps per round (after the warm-up).", lower_bound=1)
flags.DEFINE_integer("examples", 4096, "Training examples.")
flags.DEFINE_integer("rounds", 3, "Alternating measurement rounds.")
flags.DEFINE_list("text", ["single", "pairs"], "single: one corpus sentence per example; pairs: two consecutive.")
flags.DEFINE_list("padding", ["dynamic", "fixed"], "Our loop with batches cut to their longest row / fixed; "
                  "dynamic_plain: cut, the padding not skipped (dynamic skips it where run_classifier does).")
flags.register_validator("padding", lambda v: set(v) <= {"dynamic", "fixed", "dynamic_plain"},
                         "must be among dynamic, fixed, dynamic_plain")
flags.DEFINE_integer("length_bucket", None, "Dynamic padding's bucket (default: run_classifier's for each XLA "
                     "setting, bert_tf.training.settings.default_length_bucket: 1 without XLA, 8 with it).")
flags.register_validator("length_bucket", lambda v: v is None or v >= 1, "must be a positive integer")
flags.DEFINE_list("xla", ["false", "true"], "Our loop with XLA off / on.")
flags.DEFINE_string("peer_path", None, "A folder holding transformers and torch (pip install --target), for the peer.")
flags.DEFINE_integer("lora_rank", 0, "Also our loop with LoRA of this rank (0: full fine-tuning only).")
flags.DEFINE_float("lora_alpha", None, "LoRA's alpha (default: the rank).")
flags.DEFINE_float("learning_rate", 1e-4, "The separable task: full fine-tuning's learning rate.")
flags.DEFINE_float("lora_learning_rate", 1e-3, "The separable task: LoRA's learning rate.")
flags.DEFINE_integer("accuracy_steps", 300, "The separable task: training steps (0: no accuracy figures).")
flags.DEFINE_integer("accuracy_seq_length", 32, "The separable task: its sequence length.")
flags.DEFINE_bool("save_defaults", False, "Measure XLA on and off at the default flags (dynamic padding) and save "
                  "the faster as this machine's jit_compile default (bert_tf.training.speed).")
flags.DEFINE_integer("threads", os.cpu_count(), "Threads of each side (TensorFlow's intra- and inter-op pools, "
                     "torch's), one side at a time.")
flags.DEFINE_integer("inter_op_threads", None, "TensorFlow's inter-op pool alone (default: --threads; TensorFlow's "
                     "own default, which the scripts keep, is about one per core); 1 runs one op at a time.",
                     lower_bound=1)
flags.DEFINE_bool("profile", False, "Instead of the rounds: where a step's time goes, ours (the first --text, dynamic "
                  "padding, XLA off) beside the PyTorch peer's, by bench/step_profile.py's categories.")
flags.DEFINE_bool("smoke", False, "A tiny config and a few steps (flags given still win).")
flags.DEFINE_bool("kernels_probe", False, "Internal (--save_defaults): our training and prediction rates on the "
                  "first --text, dynamic padding, XLA off, in a process whose TF_ENABLE_ONEDNN_OPTS the caller set.")

# --smoke: what a quick check of every code path needs.
SMOKE = dict(**model_shape.SMOKE, seq_length=32,
             batch_size=8, steps=2, examples=64, rounds=1, xla=["false"], accuracy_steps=6,
             text=["pairs"])
# Our flags that the PyTorch peer's process takes as they are (bench/finetuning_pytorch_peer.py).
PEER_FLAGS = ("num_layers", "hidden_size", "num_heads", "intermediate_size", "vocab_size", "seq_length", "batch_size",
              "steps", "rounds")
MARKERS = ("market", "winter")  # the separable task's label 0 and 1 words
# Whether ClassifierTask cuts batches itself (dynamic padding in the library); else the bench does,
# with the library's one rule (bert_tf.data.lengths), so that it measures the same work.
LIBRARY_CUTS = "length_bucket" in inspect.signature(ClassifierTask).parameters


def texts(kind):
    """(text_a, text_b or None, label) * --examples: a corpus sentence as it is ("single") or two
    consecutive ones ("pairs"); random labels (throughput only)."""
    sentences = bench_text.corpus_sentences()
    rng = random.Random(0)
    out = []
    for _ in range(FLAGS.examples):
        i = rng.randrange(len(sentences) - 1)
        out.append((sentences[i], sentences[i + 1] if kind == "pairs" else None, rng.randrange(2)))
    return out


def lora(rank):
    return {"lora_rank": rank, "lora_alpha": FLAGS.lora_alpha if rank else None}


class _CutTask(ClassifierTask):
    """ClassifierTask whose batches are cut to their longest row (bert_tf.data.lengths), for a
    library whose ClassifierTask does not cut them itself."""

    def __init__(self, *args, length_bucket=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.bucket = length_bucket

    def _cut(self, x, y):
        return cut_padding(x, self.bucket, INPUT_NAMES), y

    def dataset(self, *args, **kwargs):
        return super().dataset(*args, **kwargs).map(self._cut)


def task(kind, padding, vocab, seq_length=None, xla=False):
    bucket = None if padding == "fixed" else bucket_of(xla)
    return (ClassifierTask if LIBRARY_CUTS else _CutTask)(
        model_shape.bert_config(), ["0", "1"], vocab_file=vocab, max_seq_length=seq_length or FLAGS.seq_length,
        pair=kind == "pairs", length_bucket=bucket,
    )


def bucket_of(xla):
    """Dynamic padding's bucket with XLA on or off: --length_bucket, else run_classifier's default."""
    return settings_module.default_length_bucket(xla) if FLAGS.length_bucket is None else FLAGS.length_bucket


def described_bucket():
    """--length_bucket for the printed configuration: the one given, else each XLA setting's default."""
    if FLAGS.length_bucket is None:
        return f"{bucket_of(False)} without XLA, {bucket_of(True)} with"
    return FLAGS.length_bucket


def features(data):
    examples = [InputExample(f"train-{i}", a, b, str(label)) for i, (a, b, label) in enumerate(data)]
    return encode_examples(examples, ["0", "1"], "single")


def word_pieces(data, vocab):
    """Real tokens per packed example ([CLS] and [SEP] included, truncated to --seq_length)."""
    a, b, _ = zip(*data, strict=True)
    kind = "pairs" if b[0] is not None else "single"
    x = task(kind, "fixed", vocab).pack(tf.constant(a), tf.constant([t or "" for t in b]))
    return np.asarray(tf.reduce_sum(x["input_mask"], axis=-1))


def ours(kind, padding, xla, data, vocab, out, lora_rank=0):
    """Our loop's examples/s (the median execution after the first, which traces) and the trainer."""
    # run_classifier's default: the padding skipped on CPU without XLA where batches are cut.
    skip = padding == "dynamic" and settings_module.default_skip_padding(bucket_of(xla), xla, "cpu")
    settings = TrainingSettings(
        output_dir=out, train_batch_size=FLAGS.batch_size, learning_rate=5e-5, num_train_steps=10 + FLAGS.steps,
        num_warmup_steps=10, save_checkpoints_steps=10 + FLAGS.steps, steps_per_execution=10, jit_compile=xla, seed=1,
        skip_padding=skip, **lora(lora_rank),
    )
    rates = []
    trainer = Trainer(task(kind, padding, vocab, xla=xla), settings, tf.distribute.OneDeviceStrategy("/cpu:0"))
    trainer.train(features(data), on_log=lambda step, logs: rates.append(logs["examples_per_second"]))
    return statistics.median(rates[1:]), trainer


@functools.cache
def pytorch_available():
    """Whether transformers and torch can be imported (`peer_process.missing_pytorch`); a message when not."""
    missing = peer_process.missing_pytorch()
    if missing:
        print(f"PyTorch peer skipped: no {' or '.join(missing)} (install transformers and torch into a folder, "
              "pass --peer_path)")
    return not missing


def pytorch_peers(datas, vocab, processes):
    """{text kind: {name: a function measuring transformers' examples/s once}} (module docstring),
    each text with each padding (each batch padded to its longest row, "dynamic", or to --seq_length,
    "fixed"), all in one process of their own (bench/finetuning_pytorch_peer.py: a model and step
    each), started here and warmed up; {} when not installed. `processes`: an ExitStack that ends
    the process (its input closed, it exits)."""
    paddings = [p for p in FLAGS.padding if p != "dynamic_plain"]
    if not paddings or not pytorch_available():
        return {}
    variants = {}
    for kind, data in datas.items():
        a, b, y = (list(column) for column in zip(*data, strict=True))
        variants.update({f"{kind}/{p}": dict(text_a=a, text_b=b, labels=y, padding=p) for p in paddings})
    spec = dict(vocab=vocab, peer_dirs=[FLAGS.peer_path] if FLAGS.peer_path else [], threads=FLAGS.threads,
                variants=variants, **{name: FLAGS[name].value for name in PEER_FLAGS})
    measure = peer_process.start("finetuning_pytorch_peer.py", spec, os.path.dirname(vocab), processes, "PyTorch")
    return {kind: {pytorch_name(p): functools.partial(measure, f"{kind}/{p}") for p in paddings} for kind in datas}


def optimizer_state(trainer):
    """`(variables, numbers, bytes)` of the optimizer's state (its slots and scalars), exactly."""
    variables = trainer.optimizer.variables
    numbers = [int(np.prod(v.shape)) for v in variables]
    size = sum(n * np.dtype(v.dtype).itemsize for n, v in zip(numbers, variables, strict=True))
    return len(variables), sum(numbers), size


def separable_examples():
    """(train, dev) InputExamples: a corpus sentence (no marker in it, at most 16 words) with
    MARKERS[label] put in at a random place; dev sentences are not among the training ones."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.split() for line in f if 0 < len(line.split()) <= 16]
    sentences = [s for s in sentences if not {w.lower().strip(".,") for w in s} & set(MARKERS)]
    rng = random.Random(2)
    rng.shuffle(sentences)
    cut = len(sentences) * 4 // 5

    def examples(pool, n, name):
        out = []
        for i in range(n):
            words, label = list(rng.choice(pool)), rng.randrange(2)
            words.insert(rng.randrange(len(words) + 1), MARKERS[label])
            out.append(InputExample(f"{name}-{i}", " ".join(words), None, str(label)))
        return out

    return examples(sentences[:cut], 1024, "train"), examples(sentences[cut:], 256, "dev")


def accuracy(vocab, out, lora_rank=0):
    """Dev accuracy on the separable task after --accuracy_steps (same initialisation, seed 1)."""
    task = ClassifierTask(model_shape.bert_config(), ["0", "1"], vocab_file=vocab,
                          max_seq_length=FLAGS.accuracy_seq_length, pair=False)
    train, dev = (encode_examples(e, task.labels, "single") for e in separable_examples())
    steps = FLAGS.accuracy_steps
    settings = TrainingSettings(
        output_dir=out, train_batch_size=FLAGS.batch_size, eval_batch_size=FLAGS.batch_size,
        learning_rate=FLAGS.lora_learning_rate if lora_rank else FLAGS.learning_rate, num_train_steps=steps,
        num_warmup_steps=steps // 10, save_checkpoints_steps=steps, steps_per_execution=min(steps, 50), seed=1,
        **lora(lora_rank),
    )
    trainer = Trainer(task, settings, tf.distribute.OneDeviceStrategy("/cpu:0"))
    trainer.train(train)
    return trainer.evaluate(dev)["eval_accuracy"]


def keras_hub_peer(data, vocab):
    """A function measuring keras-hub's examples/s once (module docstring); None when not installed."""
    try:
        import keras_hub
    except ImportError:
        print("keras-hub peer skipped: it is not installed (pip install keras-hub)")
        return None
    with open(vocab, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer(vocabulary=tokens, lowercase=True), sequence_length=FLAGS.seq_length
    )
    a, b, y = (list(column) for column in zip(*data, strict=True))
    x = (a, b) if b[0] is not None else a
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(y), seed=0)
    ds = ds.repeat().batch(FLAGS.batch_size).prefetch(tf.data.AUTOTUNE)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=FLAGS.vocab_size, num_layers=FLAGS.num_layers, num_heads=FLAGS.num_heads,
        hidden_dim=FLAGS.hidden_size, intermediate_dim=FLAGS.intermediate_size, max_sequence_length=512,
    )
    model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.AdamW(5e-5, weight_decay=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    model.fit(ds, steps_per_epoch=10, epochs=1, verbose=0)  # warm-up and compile

    def measure():
        start = time.perf_counter()
        model.fit(ds, steps_per_epoch=FLAGS.steps, epochs=1, verbose=0)
        return FLAGS.steps * FLAGS.batch_size / (time.perf_counter() - start)

    return measure


KERAS_HUB = "keras-hub fixed xla=True"


def pytorch_name(padding):
    return f"pytorch {padding} eager"


def ours_name(padding, xla, rank=0):
    return f"bert_tf {f'lora={rank} ' if rank else ''}{padding} xla={xla}"


def measure(datas, vocab, peers, tmp):
    """{text kind: {configuration: examples/s in each round}} and our last trainer of each LoRA rank
    (0: full; LoRA on the first text kind, dynamic padding)."""
    rates, trainers = {kind: {} for kind in datas}, {}
    for r in range(FLAGS.rounds):
        for i, (kind, data) in enumerate(datas.items()):
            runs = [(p, 0) for p in FLAGS.padding]
            runs += [("dynamic", FLAGS.lora_rank)] if FLAGS.lora_rank and not i else []
            for padding, rank in runs:
                for xla in xla_settings(padding, rank):
                    rate, trainers[rank] = ours(kind, padding, xla, data, vocab, tempfile.mkdtemp(dir=tmp), rank)
                    rates[kind].setdefault(ours_name(padding, xla, rank), []).append(rate)
            for name, measure_once in peers[kind].items():
                rates[kind].setdefault(name, []).append(measure_once())
            latest = ", ".join(f"{name} {values[-1]:.1f}" for name, values in rates[kind].items())
            print(f"round {r + 1}, {kind}: {latest}", flush=True)
    return rates, trainers


def xla_settings(padding, rank):
    """--xla's settings for one configuration of ours; under --smoke, where --xla is not given, XLA on
    only for the one --save_defaults's choice reads (dynamic padding, full fine-tuning): XLA's code
    path once, not a compilation for every configuration."""
    settings = [x == "true" for x in FLAGS.xla]
    if FLAGS.smoke and not FLAGS["xla"].present and (padding, rank) != ("dynamic", 0):
        return [xla for xla in settings if not xla]
    return settings


def ratio(rates, over, under):
    """`over / under` of the medians and of the fastest rounds, as text; "" when one is missing."""
    if over not in rates or under not in rates:
        return ""
    medians = statistics.median(rates[over]) / statistics.median(rates[under])
    return f"{medians:.2f}x (medians), {max(rates[over]) / max(rates[under]):.2f}x (fastest rounds)"


def report_rates(kind, rates, lengths):
    auto = speed.jit_compile_for(None)
    print(f"text={kind}: {len(lengths)} examples, {lengths.mean():.1f} word pieces on average (longest "
          f"{lengths.max()}, [CLS]/[SEP] included), {lengths.mean() / FLAGS.seq_length:.0%} of fixed padding's tokens")
    for key, values in rates.items():
        print(f"  {key:34s}: {statistics.median(values):7.1f} examples/s "
              f"(rounds: {', '.join(f'{r:.1f}' for r in values)})", flush=True)
    default, title = ours_name("dynamic", auto), f"default flags (dynamic, jit_compile unset = {auto} here)"
    lines = [
        (f"{title} / PyTorch dynamic", default, pytorch_name("dynamic")),
        (f"fixed padding (xla={auto}) / PyTorch fixed padding", ours_name("fixed", auto), pytorch_name("fixed")),
        ("default flags / keras-hub", default, KERAS_HUB),
        (f"dynamic / fixed padding (xla={auto})", default, ours_name("fixed", auto)),
    ]
    if not auto:  # with XLA the default run does not skip the padding
        lines.append(("padding skipped / not (dynamic, xla=False)", default, ours_name("dynamic_plain", False)))
    lines += [(f"XLA on / off, {p} padding", ours_name(p, True), ours_name(p, False)) for p in FLAGS.padding]
    for title, over, under in lines:
        text = ratio(rates, over, under)
        if text:
            print(f"  {title}: {text}", flush=True)


def xla_speedup(rates, paddings):
    """XLA on / off of our loop: the geometric mean over the texts and `paddings` of the medians'
    ratios; None when no pair was measured."""
    pairs = [(r[ours_name(p, True)], r[ours_name(p, False)]) for r in rates.values() for p in paddings
             if ours_name(p, True) in r and ours_name(p, False) in r]
    if not pairs:
        return None
    return float(np.exp(np.mean([np.log(statistics.median(on) / statistics.median(off)) for on, off in pairs])))


def report_xla(rates):
    """The measurement behind jit_compile's CPU choice: XLA on / off at the default flags (dynamic
    padding, over the texts measured; every padding measured when dynamic is not among them)."""
    paddings = ["dynamic"] if "dynamic" in FLAGS.padding else FLAGS.padding
    mean = xla_speedup(rates, paddings)
    if mean is None:
        return
    choice = speed.choose_jit_compile(None)
    print(f"XLA on / off on this machine ({speed.current_platform()}), {', '.join(paddings)} padding: {mean:.2f}x "
          f"(geometric mean of the medians above): the measurement supports jit_compile={mean > 1} here; unset, it "
          f"resolves to {choice.value} ({choice.source})", flush=True)


PROBE = "KERNELS_PROBE "


def profile(kind, data, vocab, peers, tmp):
    """--profile: our step's op time by category (TensorFlow's profiler over `ours`, the executions
    after the first) beside the PyTorch peer's (torch's profiler in its process), in ms per step."""
    import step_profile  # bench/, this script's folder

    def run():  # ms per step
        return 1000 * FLAGS.batch_size / ours(kind, "dynamic", False, data, vocab, tempfile.mkdtemp(dir=tmp))[0]

    sides = {"bert_tf": step_profile.tensorflow_side(run, FLAGS.steps, tempfile.mkdtemp(dir=tmp))}
    measure = peers.get(kind, {}).get(pytorch_name("dynamic"))
    if measure is not None:
        sides["pytorch"] = measure(request="profile")
    print(f"profile, text={kind}, dynamic padding, XLA off, {FLAGS.steps} steps (op times: bench/step_profile.py):")
    for line in step_profile.report(sides):
        print(line, flush=True)


def kernels_probe(vocab, tmp):
    """--kernels_probe: prints `PROBE {"training": examples/s, "prediction": examples/s}` of our
    loop in this process (its oneDNN setting the caller's): training as `ours` measures it (first
    --text, dynamic padding, XLA off), prediction the same trainer's `predict` (at the scripts'
    default --predict_batch_size, 8) over up to 32 training batches' worth of the examples."""
    data = texts(FLAGS.text[0])
    training, trainer = ours(FLAGS.text[0], "dynamic", False, data, vocab, tempfile.mkdtemp(dir=tmp))
    encoded = features(data[: FLAGS.batch_size * 32])
    trainer.predict(encoded)  # traces
    start = time.perf_counter()
    trainer.predict(encoded)
    prediction = len(encoded["label"]) / (time.perf_counter() - start)
    print(PROBE + json.dumps({"training": training, "prediction": prediction}), flush=True)


def measure_kernels():
    """oneDNN on / off for our training and prediction: --rounds rounds, each a process per setting
    (TensorFlow reads the setting as it loads) running --kernels_probe. {work: (on, off) medians}."""
    import subprocess

    found = {"1": [], "0": []}
    argv = [a for a in sys.argv[1:] if not a.startswith(("--save_defaults", "--kernels_probe", "--rounds"))]
    for r in range(FLAGS.rounds):
        for value in ("1", "0"):
            result = subprocess.run([sys.executable, os.path.abspath(__file__), *argv, "--kernels_probe",
                                     "--rounds=1", f"--text={FLAGS.text[0]}"], capture_output=True, text=True,
                                    env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": value})
            line = [x for x in result.stdout.splitlines() if x.startswith(PROBE)]
            if result.returncode or not line:
                raise RuntimeError(f"the kernels probe with TF_ENABLE_ONEDNN_OPTS={value} failed: "
                                   f"{result.stderr[-2000:]}")
            found[value].append(json.loads(line[-1][len(PROBE):]))
            print(f"round {r + 1}, TF_ENABLE_ONEDNN_OPTS={value}: " + ", ".join(
                f"{work} {rate:.1f} examples/s" for work, rate in found[value][-1].items()), flush=True)
    return {work: tuple(statistics.median(p[work] for p in found[v]) for v in ("1", "0"))
            for work in ("training", "prediction")}


def save_kernels(medians):
    """Saves oneDNN's measured choice for training and prediction (`speed.save_measured`): on where
    our loop ran faster with it."""
    for work, (on, off) in medians.items():
        path = speed.save_measured(on > off, on / off, name=f"onednn_{work}",
                                   figures={"on_examples_per_second": on, "off_examples_per_second": off})
        print(f"oneDNN on / off for {work}: {on:.1f} / {off:.1f} examples/s = {on / off:.2f}x; saved "
              f"onednn_{work}={on > off} to {path}: the scripts use it where TF_ENABLE_ONEDNN_OPTS is not set",
              flush=True)


def save_defaults(rates):
    """Saves jit_compile's measured choice for this machine (`speed.save_measured`): XLA on when it
    made our step faster at the default flags (dynamic padding, over the texts measured)."""
    mean = xla_speedup(rates, ["dynamic"])
    if mean is None:
        raise app.UsageError("--save_defaults needs dynamic padding measured with XLA on and off (--xla=false,true)")
    path = speed.save_measured(mean > 1, mean)
    print(f"saved jit_compile={mean > 1} for this machine (XLA on / off at the default flags, dynamic padding: "
          f"{mean:.2f}x) to {path}; the scripts use it where --jit_compile is not given", flush=True)


def report_lora(trainers, vocab, tmp):
    """Trainable parameters and optimizer state of full fine-tuning and LoRA, then their accuracy on
    the separable task."""
    rank = FLAGS.lora_rank
    states = {r: optimizer_state(trainers[r]) for r in (0, rank)}
    for r, (count, numbers, size) in states.items():
        name = f"lora={r} alpha={trainers[r].settings.lora_alpha:g}" if r else "full fine-tuning"
        print(f"{name:28s}: {trainers[r].parameters()}; optimizer state: {count} variables, {numbers:,} numbers, "
              f"{size / 2**20:.2f} MiB", flush=True)
    print(f"LoRA's optimizer state is {states[rank][2] / states[0][2]:.2%} of full fine-tuning's", flush=True)
    if FLAGS.accuracy_steps:
        accuracies = {r: accuracy(vocab, tempfile.mkdtemp(dir=tmp), r) for r in (0, rank)}
        print(
            f"separable task ({FLAGS.accuracy_steps} steps of {FLAGS.batch_size}, seq {FLAGS.accuracy_seq_length}), "
            f"dev accuracy: full fine-tuning {accuracies[0]:.3f} (learning rate {FLAGS.learning_rate:g}), "
            f"lora={rank} {accuracies[rank]:.3f} (learning rate {FLAGS.lora_learning_rate:g})",
            flush=True,
        )


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # TensorFlow's checkpoint saver logs each save
    if FLAGS.profile:  # one pass of one configuration: refuse what it would leave unused
        given = [f"--{name}" for name in ("save_defaults", "lora_rank", "xla", "padding", "rounds")
                 if FLAGS[name].present]
        if given:
            raise app.UsageError(f"--profile profiles one pass of dynamic padding without XLA: it takes no "
                                 f"{', '.join(given)}")
        FLAGS.padding, FLAGS.text = ["dynamic"], FLAGS.text[:1]  # the peer builds only the step profiled
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    if FLAGS.save_defaults:  # what the saved choice rests on, unless given
        for name, value in (("xla", ["false", "true"]), ("padding", ["dynamic"])):
            if not FLAGS[name].present:
                FLAGS[name].value = value
    # TensorFlow's documented thread settings (before its runtime starts); the PyTorch peer sets the same count.
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads or FLAGS.threads)
    if FLAGS.peer_path:
        sys.path.append(FLAGS.peer_path)  # after ours: the peers' own numpy must not shadow ours
    print(
        f"config: {model_shape.described()} seq={FLAGS.seq_length} batch={FLAGS.batch_size} "
        f"length_bucket={described_bucket()}, "
        "fp32, real-length text; batches cut by "
        f"{'ClassifierTask' if LIBRARY_CUTS else 'the bench (bert_tf.data.lengths)'}; {FLAGS.threads} threads"
        + (f" (TensorFlow's inter-op: {FLAGS.inter_op_threads})" if FLAGS.inter_op_threads else ""),
        flush=True,
    )
    if FLAGS.kernels_probe:
        with tempfile.TemporaryDirectory() as tmp:
            return kernels_probe(bench_text.padded_vocab(tmp, FLAGS.vocab_size), tmp)
    kernel_medians = measure_kernels() if FLAGS.save_defaults else None
    datas = {kind: texts(kind) for kind in FLAGS.text}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as processes:
        vocab = bench_text.padded_vocab(tmp, FLAGS.vocab_size)
        peers = pytorch_peers(datas, vocab, processes)
        if FLAGS.profile:
            return profile(FLAGS.text[0], datas[FLAGS.text[0]], vocab, peers, tmp)
        for kind, data in datas.items():
            found = {**peers.get(kind, {}), KERAS_HUB: keras_hub_peer(data, vocab)}
            peers[kind] = {name: run for name, run in found.items() if run is not None}
        rates, trainers = measure(datas, vocab, peers, tmp)
        processes.close()  # the peers are done
        for kind, data in datas.items():
            report_rates(kind, rates[kind], word_pieces(data, vocab))
        report_xla(rates)
        if FLAGS.save_defaults:
            save_defaults(rates)
            save_kernels(kernel_medians)
        if FLAGS.lora_rank:
            report_lora(trainers, vocab, tmp)


if __name__ == "__main__":
    app.run(main)
