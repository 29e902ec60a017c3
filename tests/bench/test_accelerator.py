"""bench/accelerator.py in its smoke size: BertPretrainer.fit on Keras' JAX backend (CPU here),
without TensorFlow, and its MFU is the rate times the hand-counted FLOPs over the printed peak."""

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow

# The smoke config (L=2 H=32 A=2 I=64, vocab 1000, seq 32, 5 predictions), forward matmul FLOPs:
# per layer 2 x 32 x (4 x 32 x 32 + 2 x 32 x 64) projections and feed-forward + 4 x 32 x 32 x 32
# attention scores and context; the masked-LM transform and output 2 x 5 x (32 x 32 + 32 x 1000);
# pooler and next-sentence 2 x (32 x 32 + 32 x 2); training is three times the forward.
SMOKE_TRAINING_FLOPS = 3 * (2 * (524_288 + 131_072) + 330_240 + 2_176)


def test_smoke_run_trains_on_jax_and_reports_mfu():
    out = run_bench("accelerator.py", "--smoke", env={"JAX_PLATFORMS": "cpu"})
    assert "backend=jax" in out
    assert f"dtype=bfloat16 attention dropout=0.1; {SMOKE_TRAINING_FLOPS:,} training FLOP/sequence" in out
    assert "TensorFlow imported: False" in out
    rate = number(r"^sequences/s: ([\d.]+) \(3 steps of 8 in", out)
    seconds = number(r"^sequences/s: [\d.]+ \(3 steps of 8 in ([\d.]+) s\)", out)
    assert rate == pytest.approx(24 / seconds, rel=0.05, abs=0.1)
    # On a CPU there is no nominal peak: the measured one only.
    assert "nominal" not in out
    mfu = number(r"^MFU: ([\d.]+)% of the measured matmul peak", out)
    peak = number(r"^MFU: .* peak, ([\d.]+) TFLOP/s \(bfloat16\)", out)
    assert peak > 0
    assert mfu == pytest.approx(100 * rate * SMOKE_TRAINING_FLOPS / (peak * 1e12), rel=0.05, abs=0.1)
