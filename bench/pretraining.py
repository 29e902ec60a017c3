"""Pre-training throughput and model FLOPs utilisation, ours and (where installed) keras-hub's
and Hugging Face transformers' on PyTorch.

    python bench/pretraining.py [--num_layers=4 --hidden_size=256 --num_heads=4
                                 --intermediate_size=1024 --seq_length=128 --predictions=20
                                 --batch_size=32 --steps=30 --peer_dirs=FOLDER,...]
    python bench/pretraining.py --profile [--peer_dirs=FOLDER]  # where a float32 step's time goes, both sides
    python bench/pretraining.py --smoke   # tiny config, a few steps: that the bench still runs

The peers are not dependencies: install them into a folder of their own and name it in
`--peer_dirs` (appended to sys.path, after the environment's packages), e.g.
`pip install --target /tmp/peers keras-hub` and, for PyTorch's CPU wheel,
`pip install --target /tmp/peers torch --index-url https://download.pytorch.org/whl/cpu transformers`.
A peer that does not import is skipped with a message.

For each of fp32 / bf16 x XLA off / on, trains our BertPretrainer with the run_pretraining loop
(original AdamW, TFRecords through the tf.data pipeline) and prints sequences/s and MFU: the
model's training FLOPs per second (3 x the forward matmul FLOPs) divided by a matmul peak
measured in the same run for that dtype. With keras-hub installed, also trains keras-hub's BERT
(BertBackbone + MaskedLMHead + a 2-way NSP dense, Keras AdamW, jit_compile) on the same shapes
from in-memory batches, and prints our ratio to it. The configurations take turns for `--rounds`
rounds; medians and the fastest rounds are printed, so that a slow spell of a shared machine does
not land on one side only. The ratio to keras-hub is given for both: on 2 CPU cores its fit()
rounds alternate between two speeds (~23 and ~35 sequences/s in one process, also alone in a
process: 33.9, 33.6, 23.4, 35.8, 23.4, 35.4), which its median mixes and its fastest round does
not; it is measured `--hub_fits_per_round` times per round to catch its fast speed.

With transformers and torch installed, also trains BertForPreTraining's layers on PyTorch (CPU,
eager, its default attention; bf16: under bf16 autocast, as transformers' Trainer trains on a CPU
with `bf16=True`) on the same shapes: the masked-LM head reads the 20
gathered positions as ours does (not all 128), the next-sentence head the pooled output, summed
cross-entropies, torch.optim.AdamW (weight decay 0.01) with the gradient clipped to norm 1 as
ours. It runs in a process of its own (bench/pretraining_pytorch_peer.py; bench/peer_process.py
says why), one for every dtype (a model and step each), takes turns with ours in each round, and
its ratio is printed as keras-hub's. Every side uses --threads intra- and inter-op threads (ours
--inter_op_threads inter-op ones where given). Its
figure depends on the machine being quiet far more than ours: with two OpenMP threads on 2 cores
that other processes also use, its steps slowed ~5x (35.6 sequences/s at load 1; 5.3-7.3 at load
5, when one thread gave 13.7), so read its ratio with the load beside it (printed at the end).

With --profile there are no rounds: a float32 step of ours (XLA off, where TensorFlow's ops can be
told apart) runs under TensorFlow's profiler and the PyTorch peer's under torch's, and each side's
op time per step is printed by category (bench/step_profile.py), with the matrix products' share.
TensorFlow runs two ops at once by default, and an op beside another counts its wait for a core:
`--inter_op_threads=1` runs ours one op at a time, whose op times then add up to its step.

MFU counts the whole model's FLOPs for all; ours skips part of them (the last layer runs only
for the rows the pre-training heads read), which is what a higher rate buys.
"""

import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/pretraining.py`: bert_tf from this checkout

import model_shape  # noqa: E402  (bench/, this script's folder)
import peer_process  # noqa: E402

from bert_tf.data import tfrecords  # noqa: E402
from bert_tf.training.pretraining import Pretraining, PretrainingSettings  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("seq_length", 128, "")
flags.DEFINE_integer("predictions", 20, "")
flags.DEFINE_integer("batch_size", 32, "Global batch.")
flags.DEFINE_integer("steps", 30, "Measured steps per configuration (after 10 warm-up steps).", lower_bound=1)
flags.DEFINE_list("dtypes", ["float32", "bfloat16"], "")
flags.DEFINE_list("xla", ["false", "true"], "")
flags.DEFINE_integer("rounds", 3, "Alternating measurement rounds; medians are reported.")
flags.DEFINE_integer(
    "hub_fits_per_round", 2, "keras-hub fit() calls per round: its speed varies between calls (see above)."
)
flags.DEFINE_list("peer_dirs", [], "Folders holding the peers (keras-hub; transformers + torch), appended to sys.path.")
flags.DEFINE_list("peers", ["keras_hub", "pytorch"], "Peers to measure where installed.")
flags.DEFINE_integer("threads", os.cpu_count(), "Intra- and inter-op threads of every side (TensorFlow's, torch's).")
flags.DEFINE_integer("inter_op_threads", None, "TensorFlow's inter-op pool alone (default: --threads); 1 runs one op "
                     "at a time, so that a --profile's op times are not stretched by ops running beside them.",
                     lower_bound=1)
flags.DEFINE_integer("peak_size", 2048, "Matrix size of the matmul peak measurement.")
flags.DEFINE_boolean("profile", False, "Instead of the rounds: where a float32 step's time goes (XLA off), ours "
                     "beside the PyTorch peer's, by bench/step_profile.py's categories.")
flags.DEFINE_boolean("smoke", False, "Tiny config, one round of a few steps: checks that the bench still runs.")

SMOKE = {**model_shape.SMOKE, "seq_length": 32, "predictions": 5, "batch_size": 8, "steps": 10, "rounds": 1,
         "hub_fits_per_round": 1, "peak_size": 256, "dtypes": ["float32", "bfloat16"], "xla": ["false"]}


def train_flops_per_sequence():
    L, H, inner, S, P, V = (FLAGS.num_layers, FLAGS.hidden_size, FLAGS.intermediate_size, FLAGS.seq_length,
                        FLAGS.predictions, FLAGS.vocab_size)
    forward = L * (2 * S * (4 * H * H + 2 * H * inner) + 4 * S * S * H)  # projections, FFN, attention
    forward += 2 * P * (H * H + H * V)  # masked-LM transform and tied output projection
    return 3 * forward  # forward + backward (2x)


def matmul_peak(dtype):
    n = FLAGS.peak_size
    a = tf.random.normal([n, n], dtype=tf.float32)
    a = tf.cast(a, dtype)

    @tf.function
    def run():
        x = a
        for _ in range(8):
            x = tf.matmul(x, a) * 1e-3
        return x

    run()
    start = time.perf_counter()
    for _ in range(3):
        run().numpy()
    return 3 * 8 * 2 * n**3 / (time.perf_counter() - start)


def synthetic_features(n, seed=0):
    """`n` full-length instances under the record names: random words, segments of half length."""
    rng = np.random.default_rng(seed)
    S, P = FLAGS.seq_length, FLAGS.predictions
    return {
        "input_ids": rng.integers(5, FLAGS.vocab_size, (n, S)),
        "input_mask": np.ones((n, S), np.int64),
        "segment_ids": np.concatenate([np.zeros((n, S // 2)), np.ones((n, S - S // 2))], 1).astype(np.int64),
        "masked_lm_positions": np.sort(rng.integers(1, S - 1, (n, P)), 1),
        "masked_lm_ids": rng.integers(5, FLAGS.vocab_size, (n, P)),
        "masked_lm_weights": np.ones((n, P), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)),
    }


def synthetic_records(path, n):
    with tf.io.TFRecordWriter(path) as writer:
        for record in tfrecords.serialize_examples(synthetic_features(n)).numpy():
            writer.write(record)
    return path


def ours(dtype, xla, data, out):
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if dtype == "bfloat16" else "float32")
    config = model_shape.bert_config()
    settings = PretrainingSettings(
        output_dir=out, train_batch_size=FLAGS.batch_size, max_seq_length=FLAGS.seq_length,
        max_predictions_per_seq=FLAGS.predictions, learning_rate=1e-4, num_train_steps=10 + FLAGS.steps,
        num_warmup_steps=10, save_checkpoints_steps=10 + FLAGS.steps, steps_per_execution=10, jit_compile=xla, seed=1,
    )
    rates = []
    run = Pretraining(config, settings, tf.distribute.OneDeviceStrategy("/cpu:0"))
    run.train(data, on_log=lambda step, logs: rates.append(logs["examples_per_second"]))
    keras.mixed_precision.set_global_policy("float32")
    return statistics.median(rates[1:])  # the first execution includes tracing


def keras_hub_baseline(xla, dtype):
    """Builds keras-hub's model; returns a function that measures its sequences/s once."""
    import keras_hub

    keras.mixed_precision.set_global_policy("mixed_bfloat16" if dtype == "bfloat16" else "float32")
    S, P, B = FLAGS.seq_length, FLAGS.predictions, FLAGS.batch_size
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=FLAGS.vocab_size, num_layers=FLAGS.num_layers, num_heads=FLAGS.num_heads,
        hidden_dim=FLAGS.hidden_size, intermediate_dim=FLAGS.intermediate_size, max_sequence_length=S,
    )
    inputs = {**backbone.input, "mask_positions": keras.Input((P,), dtype="int32", name="mask_positions")}
    outputs = backbone({k: inputs[k] for k in backbone.input})
    mlm = keras_hub.layers.MaskedLMHead(
        token_embedding=backbone.token_embedding, intermediate_activation="gelu", name="mlm"
    )(outputs["sequence_output"], mask_positions=inputs["mask_positions"])
    nsp = keras.layers.Dense(2, name="nsp")(outputs["pooled_output"])
    model = keras.Model(inputs, {"mlm": mlm, "nsp": nsp})
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01),
        loss={"mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        jit_compile=xla,
    )
    rng = np.random.default_rng(0)
    x = {
        "token_ids": rng.integers(5, FLAGS.vocab_size, (B, S)).astype(np.int32),
        "segment_ids": np.zeros((B, S), np.int32),
        "padding_mask": np.ones((B, S), bool),
        "mask_positions": np.sort(rng.integers(1, S - 1, (B, P)), 1).astype(np.int32),
    }
    y = {
        "mlm": rng.integers(5, FLAGS.vocab_size, (B, P)).astype(np.int32),
        "nsp": rng.integers(0, 2, (B, 1)).astype(np.int32),
    }
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    model.fit(ds, steps_per_epoch=10, epochs=1, verbose=0)  # warm-up and compile
    keras.mixed_precision.set_global_policy("float32")

    def measure():
        start = time.perf_counter()
        model.fit(ds, steps_per_epoch=FLAGS.steps, epochs=1, verbose=0)
        return FLAGS.steps * B / (time.perf_counter() - start)

    return measure


def pytorch_peer(directory, processes):
    """{dtype: a function measuring transformers' BertForPreTraining on PyTorch once (sequences/s)}
    for each of --dtypes, all in one process of their own (bench/pretraining_pytorch_peer.py: a
    model and step each), started and warmed up here; bfloat16: under bf16 autocast, as
    transformers' Trainer trains on a CPU with `bf16=True`."""
    spec = dict(peer_dirs=FLAGS.peer_dirs, threads=FLAGS.threads, vocab_size=FLAGS.vocab_size,
                num_layers=FLAGS.num_layers, hidden_size=FLAGS.hidden_size, num_heads=FLAGS.num_heads,
                intermediate_size=FLAGS.intermediate_size, seq_length=FLAGS.seq_length,
                predictions=FLAGS.predictions, batch_size=FLAGS.batch_size, steps=FLAGS.steps,
                variants={dtype: {"bfloat16": dtype == "bfloat16"} for dtype in FLAGS.dtypes})
    measure = peer_process.start("pretraining_pytorch_peer.py", spec, directory, processes, "PyTorch")
    return {dtype: functools.partial(measure, dtype) for dtype in FLAGS.dtypes}


def installed_peers(directory, processes):
    """{peer name: builder(dtype) -> measure function, or None for a dtype it does not run} of the
    peers that are installed; the PyTorch peer's process (started at its first build, for every
    dtype) ends with `processes`."""
    sys.path.extend(FLAGS.peer_dirs)
    builders = {}
    if "keras_hub" in FLAGS.peers:
        try:
            import keras_hub  # noqa: F401

            builders["keras-hub xla=True"] = lambda dtype: keras_hub_baseline(xla=True, dtype=dtype)
        except ImportError as e:
            print(f"keras-hub is not installed ({e}): no comparison with it (see --peer_dirs)")
    if "pytorch" in FLAGS.peers:
        missing = peer_process.missing_pytorch()
        if missing:
            print(f"transformers or torch is not installed (no {', '.join(missing)}): no comparison with PyTorch "
                  "(see --peer_dirs)")
        else:
            started = functools.cache(lambda: pytorch_peer(directory, processes))
            builders["PyTorch eager"] = lambda dtype: started()[dtype]
    return builders


def measure_dtype(dtype, data, tmp, builders):
    """{name: [sequences/s per measurement]}: ours for each --xla value and each peer, in turns."""
    peers = {name: build(dtype) for name, build in builders.items()}
    peers = {name: measure for name, measure in peers.items() if measure is not None}
    rates = {}
    for _ in range(FLAGS.rounds):
        for xla in (x == "true" for x in FLAGS.xla):
            rate = ours(dtype, xla, data, tempfile.mkdtemp(dir=tmp))
            rates.setdefault(f"bert_tf   xla={str(xla):5s}", []).append(rate)
        for name, measure in peers.items():
            fits = FLAGS.hub_fits_per_round if name.startswith("keras-hub") else 1
            rates.setdefault(name, []).extend(measure() for _ in range(fits))
    return rates


def profile(data, tmp, builders, flops, peak):
    """--profile: our float32 step's op time by category (TensorFlow's profiler over `ours`, XLA off,
    the executions after the first) beside the PyTorch peer's (torch's profiler in its process), in
    ms per step, and the matrix products' share of each side's op time."""
    import step_profile  # bench/, this script's folder

    def run():  # ms per step
        return 1000 * FLAGS.batch_size / ours("float32", False, data, tempfile.mkdtemp(dir=tmp))

    sides = {"bert_tf": step_profile.tensorflow_side(run, FLAGS.steps, tempfile.mkdtemp(dir=tmp))}
    build = builders.get("PyTorch eager")
    if build is not None:
        sides["pytorch"] = build("float32")(request="profile")
    rate = 1000 * FLAGS.batch_size / sides["bert_tf"]["wall"]
    print(f"profile, float32, XLA off, {FLAGS.steps} steps (op times: bench/step_profile.py); ours at "
          f"{rate:.1f} sequences/s without the profiler, MFU {rate * flops / peak:.1%}:")
    for line in step_profile.report(sides):
        print(line, flush=True)
    for name, side in sides.items():
        found = side["categories"]
        products = found["forward products"] + found["backward products"]
        print(f"  {name}: matrix products {products / sum(found.values()):.0%} of its op time", flush=True)


def report(dtype, rates, flops, peak):
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, rate in medians.items():
        spread = ", ".join(f"{r:.1f}" for r in rates[name])
        print(f"{name:18s} {dtype:8s}: {rate:8.1f} sequences/s (runs: {spread}), MFU {rate * flops / peak:.1%}",
              flush=True)
    ours_best = max(max(values) for name, values in rates.items() if name.startswith("bert_tf"))
    ours_median = max(rate for name, rate in medians.items() if name.startswith("bert_tf"))
    for name in (name for name in rates if not name.startswith("bert_tf")):
        print(f"{dtype}: bert_tf / {name.split()[0]} = {ours_best / max(rates[name]):.2f}x (fastest round of "
              f"each), {ours_median / medians[name]:.2f}x (medians)", flush=True)


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    # TensorFlow's documented thread settings (before its runtime starts); the PyTorch peer sets the same count.
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op_threads or FLAGS.threads)
    flops = train_flops_per_sequence()
    print(f"config: {model_shape.described()} seq={FLAGS.seq_length} predictions={FLAGS.predictions} "
          f"batch={FLAGS.batch_size}; {flops:,} training FLOP/sequence")
    if FLAGS.profile:  # one float32 pass without XLA: refuse what it would leave unused
        given = [f"--{name}" for name in ("dtypes", "xla", "rounds") if FLAGS[name].present]
        if given:
            raise app.UsageError(f"--profile profiles one float32 pass without XLA: it takes no {', '.join(given)}")
        FLAGS.dtypes = ["float32"]  # the peer builds only the step profiled
    peaks = {d: matmul_peak(tf.bfloat16 if d == "bfloat16" else tf.float32) for d in FLAGS.dtypes}
    print("matmul peak: " + ", ".join(f"{d} {p / 1e9:.0f} GFLOP/s" for d, p in peaks.items()))
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as processes:
        builders = installed_peers(tmp, processes)
        data = synthetic_records(os.path.join(tmp, "data.tfrecord"), 2048)
        if FLAGS.profile:
            return profile(data, tmp, builders, flops, peaks["float32"])
        for dtype in FLAGS.dtypes:
            report(dtype, measure_dtype(dtype, data, tmp, builders), flops, peaks[dtype])
    print(f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPU cores")


if __name__ == "__main__":
    app.run(main)
