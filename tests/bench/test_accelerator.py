"""bench/accelerator.py in its smoke size: BertPretrainer.fit on Keras' JAX backend (CPU here),
without TensorFlow, and its MFU is the rate times the hand-counted FLOPs over the printed peak; the
PyTorch peer measured or its absence said. One run (the bench's default dropout, so that `fit` takes
the explicit attention with dropout and the fused one is compiled beside it) serves every test."""

import importlib.util

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow

# The smoke config (L=2 H=32 A=2 I=64, vocab 1000, seq 32, 5 predictions), forward matmul FLOPs:
# per layer 2 x 32 x (4 x 32 x 32 + 2 x 32 x 64) projections and feed-forward + 4 x 32 x 32 x 32
# attention scores and context; the masked-LM transform and output 2 x 5 x (32 x 32 + 32 x 1000);
# pooler and next-sentence 2 x (32 x 32 + 32 x 2); training is three times the forward.
SMOKE_TRAINING_FLOPS = 3 * (2 * (524_288 + 131_072) + 330_240 + 2_176)


@pytest.fixture(scope="module")
def out():
    # A fresh interpreter: the bench puts Keras on JAX before importing it.
    return run_bench("accelerator.py", "--smoke", env={"JAX_PLATFORMS": "cpu"}, real_process=True)


def test_smoke_run_trains_on_jax_and_reports_mfu(out):
    assert "backend=jax" in out
    assert f"dtype=bfloat16 attention dropout=0.1; {SMOKE_TRAINING_FLOPS:,} training FLOP/sequence" in out
    assert "TensorFlow imported: False" in out
    # Without a GPU the attention compiles to XLA's ops; the fused path agrees with the explicit one
    # to bf16's precision.
    assert "attention without dropout (not this run's path: dropout on the probabilities takes the explicit " \
           "one) compiles to: XLA ops, no cuDNN fused kernel" in out
    assert number(r"output vs the explicit path: ([\d.e+-]+) relative", out) < 1e-2
    rate = number(r"^sequences/s: ([\d.]+) \(3 steps of 8 in", out)
    seconds = number(r"^sequences/s: [\d.]+ \(3 steps of 8 in ([\d.]+) s\)", out)
    assert rate == pytest.approx(24 / seconds, rel=0.05, abs=0.1)
    assert number(r"^bert_tf: ([\d.]+) sequences/s, median of", out) == pytest.approx(rate, abs=0.1)
    # On a CPU there is no nominal peak: the measured one only, in the products' own dtype.
    assert "nominal" not in out
    mfu = number(r"^bert_tf: .* MFU ([\d.]+)% of the measured matmul peak", out)
    peak = number(r"^measured matmul peak: ([\d.]+) TFLOP/s \(bfloat16 products of 256\^2\)", out)
    assert peak > 0
    assert mfu == pytest.approx(100 * rate * SMOKE_TRAINING_FLOPS / (peak * 1e12), rel=0.05, abs=0.1)


def test_smoke_run_measures_the_pytorch_peer_or_says_why_not(out):
    if all(importlib.util.find_spec(name) for name in ("torch", "transformers")):
        assert number(r"^bert_tf / PyTorch = ([\d.]+)x \(medians\)", out) > 0
    else:
        assert "transformers or torch is not installed" in out and "no comparison with PyTorch" in out
        assert "bert_tf / PyTorch" not in out
