"""bench/pretraining.py in its smoke size: our loop trains, and its MFU is the rate times the
hand-counted FLOPs over the printed peak; peers that are not installed are skipped by name."""

import re

import pytest

from tests.bench.smoke import number, run_bench

pytestmark = pytest.mark.slow

# The smoke config (L=2 H=32 A=2 I=64, vocab 1000, seq 32, 5 predictions), forward matmul FLOPs:
# per layer 2 x 32 x (4 x 32 x 32 + 2 x 32 x 64) projections and feed-forward + 4 x 32 x 32 x 32
# attention scores and context; the masked-LM transform and output 2 x 5 x (32 x 32 + 32 x 1000);
# training is three times the forward.
SMOKE_TRAINING_FLOPS = 3 * (2 * (524_288 + 131_072) + 330_240)


def test_smoke_run_measures_our_loop():
    out = run_bench("pretraining.py", "--smoke")
    assert (f"config: L=2 H=32 A=2 I=64 vocab=1000 seq=32 predictions=5 batch=8; {SMOKE_TRAINING_FLOPS:,} "
            "training FLOP/sequence") in out
    peak = number(r"^matmul peak: float32 (\d+) GFLOP/s$", out)
    rate = number(r"^bert_tf   xla=False float32 : +([\d.]+) sequences/s", out)
    mfu = number(r"^bert_tf   xla=False float32 : .*, MFU ([\d.]+)%$", out)
    assert mfu == pytest.approx(100 * rate * SMOKE_TRAINING_FLOPS / (peak * 1e9), rel=0.05, abs=0.1)
    # Each peer is measured (with its ratio) or skipped with a message naming it.
    for row, missing in (("keras-hub xla=True", "keras-hub is not installed"),
                         ("PyTorch eager", "transformers or torch is not installed")):
        measured = re.search(rf"^{re.escape(row)} +float32 : +[\d.]+ sequences/s", out, re.M)
        assert bool(measured) != (missing in out), out
