"""BERT pre-training steps on Keras' JAX backend: sequences/s and model FLOPs utilisation (MFU),
for an accelerator (the backend takes the first JAX device: a GPU or TPU where there is one).

    python bench/accelerator.py [--steps=50 --batch_size=64 --dtype=bfloat16]   # BERT-Base, seq 128
    python bench/accelerator.py --smoke    # tiny config, CPU, a few steps: that the bench still runs

KERAS_BACKEND is set to jax here, before Keras is imported. The model is `BertPretrainer` over
`BertEncoder` (BERT-Base by default: L=12, H=768, A=12, I=3072, vocab 30,522), trained with
`model.fit` and the original AdamW on warmup + linear decay, on synthetic full-length batches
(random words, 20 masked positions, random next-sentence labels) held in memory, in bf16 mixed
precision by default. The first `fit` (warm-up, compiling the step) is not timed; the second runs
`--steps` steps and is timed whole, so its sequences/s include fit's per-step work on the host.

MFU is the model's training FLOPs per second (3 x the forward matmul FLOPs: projections, attention
scores and context, feed-forward, pooler and both heads, as though the heads read every row the
model computes; ours runs the last layer only for the rows the heads read, so a rate that counts
only the work done would be lower) divided by a peak, printed against both peaks where there are
two: the device's nominal dense bf16 peak when it is a GPU listed in NOMINAL_BF16_PEAK (from the
vendors' data sheets), and always a matmul peak measured in this run for the same dtype (chains
of square matmuls, `--peak_size`).

The peer, where torch and transformers import (`--peer_dirs`, else skipped with a message):
transformers' BertForPreTraining on PyTorch, eager, on the same device, batch and dropout, as its
Trainer runs with `bf16=True` on a GPU (bf16 autocast, fused AdamW; fp32 on a CPU), in a process of
its own (bench/pretraining_pytorch_peer.py), measured in turns with ours over `--rounds`. It also
prints which kernels the attention without dropout compiles to at this bench's shapes (cuDNN's
fused attention or XLA's own ops) and how far that output is from the explicit path's.
"""

import os

os.environ["KERAS_BACKEND"] = "jax"  # before anything imports Keras
# JAX takes 75% of a GPU's memory at its start unless told: leave the peer's process room beside it.
os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.5")

import contextlib  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bert_tf from this checkout

import peer_process  # noqa: E402  (bench/, this script's folder)

from bert_tf import BertConfig, BertEncoder, BertPretrainer  # noqa: E402
from bert_tf.layers import MultiHeadSelfAttention  # noqa: E402
from bert_tf.training import create_optimizer  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_layers", 12, "")
flags.DEFINE_integer("hidden_size", 768, "")
flags.DEFINE_integer("num_heads", 12, "")
flags.DEFINE_integer("intermediate_size", 3072, "")
flags.DEFINE_integer("vocab_size", 30522, "")
flags.DEFINE_integer("seq_length", 128, "")
flags.DEFINE_integer("predictions", 20, "Masked positions per sequence (the original's max_predictions_per_seq).")
flags.DEFINE_integer("batch_size", 64, "", lower_bound=1)
flags.DEFINE_integer("steps", 50, "Timed steps (after `--warmup_steps` untimed ones that compile the step).",
                     lower_bound=1)
flags.DEFINE_integer("warmup_steps", 5, "", lower_bound=1)
flags.DEFINE_integer("steps_per_execution", 1, "Steps per compiled call of fit (Keras' steps_per_execution).",
                     lower_bound=1)
flags.DEFINE_enum("dtype", "bfloat16", ["bfloat16", "float32"], "bfloat16: Keras' mixed_bfloat16 policy.")
flags.DEFINE_float("attention_probs_dropout_prob", 0.1, "The original's 0.1; 0 allows a fused attention kernel.")
flags.DEFINE_integer("peak_size", 8192, "Matrix size of the measured matmul peak.")
flags.DEFINE_integer("rounds", 2, "Timed fits of ours, each followed by one measurement of the peer.",
                     lower_bound=1)
flags.DEFINE_list("peer_dirs", [], "Folders holding transformers and torch, appended to sys.path (the peer).")
flags.DEFINE_boolean("peer", True, "Measure the PyTorch peer where it is installed.")
flags.DEFINE_boolean("smoke", False, "Tiny config on CPU, a few steps: checks that the bench still runs.")

SMOKE = {"num_layers": 2, "hidden_size": 32, "num_heads": 2, "intermediate_size": 64, "vocab_size": 1000,
         "seq_length": 32, "predictions": 5, "batch_size": 8, "steps": 3, "warmup_steps": 2, "peak_size": 256,
         "rounds": 1}
# Dense (no sparsity) bf16 tensor-core peaks, FLOP/s, by the start of JAX's device_kind.
NOMINAL_BF16_PEAK = {
    "NVIDIA H200": 989e12,
    "NVIDIA H100 80GB HBM3": 989e12,  # SXM
    "NVIDIA H100 PCIe": 756e12,
    "NVIDIA H100 NVL": 835e12,
    "NVIDIA A100": 312e12,
    "NVIDIA L4": 121e12,
}


def train_flops_per_sequence():
    """3 x the forward matmul FLOPs of one sequence (2 per multiply-add)."""
    L, H, inner, S, P, V = (FLAGS.num_layers, FLAGS.hidden_size, FLAGS.intermediate_size, FLAGS.seq_length,
                            FLAGS.predictions, FLAGS.vocab_size)
    per_layer = 2 * S * (4 * H * H + 2 * H * inner)  # Q, K, V and output projections; the feed-forward pair
    per_layer += 2 * 2 * S * S * H  # scores Q.K^T and context probs.V, over all heads
    heads = 2 * P * (H * H + H * V) + 2 * (H * H + 2 * H)  # masked-LM transform and tied output; pooler, NSP
    return 3 * (L * per_layer + heads)  # the backward pass costs twice the forward


def nominal_peak(device):
    """The device's dense bf16 peak from NOMINAL_BF16_PEAK, or None."""
    if FLAGS.dtype != "bfloat16" or device.platform != "gpu":
        return None
    return next((peak for name, peak in NOMINAL_BF16_PEAK.items() if device.device_kind.startswith(name)), None)


def measured_peak():
    """(FLOP/s of chained square matmuls in --dtype on the default device, the dtype they ran in)."""
    n, chain = FLAGS.peak_size, 8
    # The cast after the scaling: a NumPy float64 scalar is not weakly typed and would make it float32.
    a = (jax.random.normal(jax.random.PRNGKey(0), (n, n), dtype=FLAGS.dtype) / np.sqrt(n)).astype(FLAGS.dtype)

    @jax.jit
    def run(x):
        for _ in range(chain):
            x = x @ a
        return x

    run(a).block_until_ready()
    start, repeats = time.perf_counter(), 3
    for _ in range(repeats):
        run(a).block_until_ready()
    return repeats * chain * 2 * n**3 / (time.perf_counter() - start), str(run(a).dtype)


def synthetic_batches(n, seed=0):
    """(x, y) of `n` full-length sequences: random words, two segments, sorted masked positions."""
    rng = np.random.default_rng(seed)
    S, P = FLAGS.seq_length, FLAGS.predictions
    x = {
        "input_word_ids": rng.integers(5, FLAGS.vocab_size, (n, S)).astype(np.int32),
        "input_mask": np.ones((n, S), np.int32),
        "input_type_ids": (np.arange(S) >= S // 2).astype(np.int32)[None].repeat(n, 0),
        "masked_lm_positions": np.sort(rng.integers(1, S - 1, (n, P)), 1).astype(np.int32),
    }
    y = {
        "masked_lm_ids": rng.integers(5, FLAGS.vocab_size, (n, P)).astype(np.int32),
        "masked_lm_weights": np.ones((n, P), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int32),
    }
    return x, y


def build_model():
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if FLAGS.dtype == "bfloat16" else "float32")
    config = BertConfig(
        vocab_size=FLAGS.vocab_size, hidden_size=FLAGS.hidden_size, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=FLAGS.num_heads, intermediate_size=FLAGS.intermediate_size, type_vocab_size=2,
        max_position_embeddings=max(512, FLAGS.seq_length),
        attention_probs_dropout_prob=FLAGS.attention_probs_dropout_prob,
    )
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    total_steps = FLAGS.warmup_steps + FLAGS.steps
    model.compile(
        optimizer=create_optimizer("adamw", 1e-4, num_train_steps=total_steps, num_warmup_steps=FLAGS.warmup_steps),
        steps_per_execution=FLAGS.steps_per_execution,
    )
    return model


def timed_fit(model, steps):
    """Seconds of one `fit` over `steps` batches (the losses read back, so the device has finished)."""
    x, y = synthetic_batches(steps * FLAGS.batch_size)
    start = time.perf_counter()
    history = model.fit(x, y, batch_size=FLAGS.batch_size, epochs=1, shuffle=False, verbose=0)
    seconds = time.perf_counter() - start
    if not np.isfinite(history.history["loss"][-1]):
        raise SystemExit(f"the loss is {history.history['loss'][-1]}")
    return seconds


def attention_kernels():
    """(the cuDNN fused-attention calls in the compiled forward and backward of one attention layer
    at this bench's shapes and dtype without dropout, the relative difference of its output from the
    explicit path's) -- the path `fit` takes with --attention_probs_dropout_prob=0."""
    B, S, H = FLAGS.batch_size, FLAGS.seq_length, FLAGS.hidden_size
    layer = MultiHeadSelfAttention(H, FLAGS.num_heads, attention_probs_dropout_prob=0.0,
                                   dtype=keras.mixed_precision.global_policy())
    layer.build((B, S, H))
    x = jax.random.normal(jax.random.PRNGKey(1), (B, S, H), dtype="float32")
    mask = np.ones((B, S), np.int32)
    mask[0, S // 2:] = 0  # one row padded: the bias is not all zero

    def loss(weights, x, mask):  # the weights as arguments: as constants XLA would fold the products
        out, _ = layer.stateless_call(weights, [], x, attention_mask=mask, training=True)
        return keras.ops.sum(keras.ops.cast(out, "float32"))

    weights = [w.value for w in layer.trainable_variables]
    compiled = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(weights, x, mask).compile().as_text()
    fused = np.asarray(layer(x, attention_mask=mask), np.float32)
    explicit = np.asarray(layer(x, attention_mask=mask, return_probs=True)[0], np.float32)
    difference = np.linalg.norm(fused - explicit) / np.linalg.norm(explicit)
    return sorted(set(re.findall(r"__cudnn\$fmha\w*", compiled))), difference


def pytorch_peer(device, directory, processes):
    """A function measuring the PyTorch peer once (sequences/s), or None where it is not installed."""
    sys.path.extend(FLAGS.peer_dirs)
    missing = peer_process.missing_pytorch()
    if missing:
        print(f"transformers or torch is not installed (no {', '.join(missing)}): no comparison with PyTorch "
              "(see --peer_dirs)")
        return None
    on_gpu = device.platform == "gpu"
    spec = dict(peer_dirs=FLAGS.peer_dirs, threads=os.cpu_count(), vocab_size=FLAGS.vocab_size,
                num_layers=FLAGS.num_layers, hidden_size=FLAGS.hidden_size, num_heads=FLAGS.num_heads,
                intermediate_size=FLAGS.intermediate_size, seq_length=FLAGS.seq_length,
                predictions=FLAGS.predictions, batch_size=FLAGS.batch_size, steps=FLAGS.steps,
                device="cuda" if on_gpu else "cpu", bfloat16=on_gpu and FLAGS.dtype == "bfloat16",
                attention_probs_dropout_prob=FLAGS.attention_probs_dropout_prob)
    return peer_process.start("pretraining_pytorch_peer.py", spec, directory, processes, "PyTorch")


def main(argv):
    del argv
    if FLAGS.smoke:
        jax.config.update("jax_platforms", "cpu")
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    device = jax.devices()[0]
    flops = train_flops_per_sequence()
    print(f"device: {device.platform} {device.device_kind} ({jax.device_count()} device(s)); keras "
          f"{keras.__version__} backend={keras.backend.backend()}, jax {jax.__version__}")
    print(f"config: L={FLAGS.num_layers} H={FLAGS.hidden_size} A={FLAGS.num_heads} I={FLAGS.intermediate_size} "
          f"vocab={FLAGS.vocab_size} seq={FLAGS.seq_length} predictions={FLAGS.predictions} batch={FLAGS.batch_size} "
          f"dtype={FLAGS.dtype} attention dropout={FLAGS.attention_probs_dropout_prob}; "
          f"{flops:,} training FLOP/sequence")
    model = build_model()
    path = "this run's path" if FLAGS.attention_probs_dropout_prob == 0 else \
        "not this run's path: dropout on the probabilities takes the explicit one"
    try:
        kernels, difference = attention_kernels()
        print(f"attention without dropout ({path}) compiles to: "
              f"{', '.join(kernels) if kernels else 'XLA ops, no cuDNN fused kernel'}; "
              f"output vs the explicit path: {difference:.1e} relative")
    except Exception as e:  # a report line: the measurement goes on (its own path may not need it)
        print(f"attention without dropout ({path}) did not compile: {type(e).__name__}: {str(e)[:500]}")
    timed_fit(model, FLAGS.warmup_steps)  # compiles the step
    rates = {"bert_tf": []}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as processes:
        peer = pytorch_peer(device, tmp, processes) if FLAGS.peer else None
        for _ in range(FLAGS.rounds):
            seconds = timed_fit(model, FLAGS.steps)
            rates["bert_tf"].append(FLAGS.steps * FLAGS.batch_size / seconds)
            print(f"sequences/s: {rates['bert_tf'][-1]:.1f} ({FLAGS.steps} steps of {FLAGS.batch_size} in "
                  f"{seconds:.4f} s)", flush=True)
            if peer:
                rates.setdefault("PyTorch", []).append(peer())
    peak, peak_dtype = measured_peak()
    peaks = {"measured matmul peak": peak}
    if nominal := nominal_peak(device):
        peaks = {"nominal dense bf16 peak": nominal, **peaks}
    # The modeling code and the optimizer must run without TensorFlow (the GPU image has none).
    print(f"TensorFlow imported: {any(m == 'tensorflow' or m.startswith('tensorflow.') for m in sys.modules)}")
    for name, values in rates.items():
        rate = statistics.median(values)
        mfu = ", ".join(f"{rate * flops / value:.1%} of the {peak_name}" for peak_name, value in peaks.items())
        print(f"{name}: {rate:.1f} sequences/s, median of {', '.join(f'{r:.1f}' for r in values)}; MFU {mfu}")
    print(f"measured matmul peak: {peak / 1e12:.4g} TFLOP/s ({peak_dtype} products of {FLAGS.peak_size}^2)")
    if nominal:
        print(f"nominal dense bf16 peak: {nominal / 1e12:.2f} TFLOP/s")
    if "PyTorch" in rates:
        print(f"bert_tf / PyTorch = {statistics.median(rates['bert_tf']) / statistics.median(rates['PyTorch']):.2f}x "
              "(medians)")


if __name__ == "__main__":
    app.run(main)
