"""bench/pretraining.py in its smoke size: our loop trains, and its MFU is the rate times the
hand-counted FLOPs over the printed peak; transformers on PyTorch (the interoperability tests' peer
folder) trains in a process of its own, in float32 and under bfloat16 autocast, and gets its
ratios; keras-hub, not installed here, is skipped by name."""

import re

import pytest

from tests.bench.smoke import number, run_bench
from tests.peers import installed_peers

pytestmark = pytest.mark.slow

# The smoke config (L=2 H=32 A=2 I=64, vocab 1000, seq 32, 5 predictions), forward matmul FLOPs:
# per layer 2 x 32 x (4 x 32 x 32 + 2 x 32 x 64) projections and feed-forward + 4 x 32 x 32 x 32
# attention scores and context; the masked-LM transform and output 2 x 5 x (32 x 32 + 32 x 1000);
# training is three times the forward.
SMOKE_TRAINING_FLOPS = 3 * (2 * (524_288 + 131_072) + 330_240)


def test_smoke_run_measures_our_loop_and_pytorch(request, tmp_path_factory):
    peers = installed_peers(request, tmp_path_factory, "hf_peers")
    out = run_bench("pretraining.py", "--smoke", f"--peer_dirs={peers}")
    assert (f"config: L=2 H=32 A=2 I=64 vocab=1000 seq=32 predictions=5 batch=8; {SMOKE_TRAINING_FLOPS:,} "
            "training FLOP/sequence") in out
    peak = number(r"^matmul peak: float32 (\d+) GFLOP/s, bfloat16 \d+ GFLOP/s$", out)
    rate = number(r"^bert_tf   xla=False float32 : +([\d.]+) sequences/s", out)
    mfu = number(r"^bert_tf   xla=False float32 : .*, MFU ([\d.]+)%$", out)
    assert mfu == pytest.approx(100 * rate * SMOKE_TRAINING_FLOPS / (peak * 1e9), rel=0.05, abs=0.1)
    for dtype in ("float32", "bfloat16"):  # PyTorch's bfloat16: under autocast, as its Trainer's bf16=True
        assert re.search(rf"^bert_tf   xla=False {dtype} ?: +[\d.]+ sequences/s", out, re.M), out
        assert re.search(rf"^PyTorch eager +{dtype} ?: +[\d.]+ sequences/s", out, re.M), out
        assert re.search(rf"^{dtype}: bert_tf / PyTorch = [\d.]+x \(fastest round of each\), [\d.]+x \(medians\)$",
                         out, re.M), out
    # keras-hub is measured (with its ratio) or skipped with a message naming it.
    measured = re.search(r"^keras-hub xla=True +float32 : +[\d.]+ sequences/s", out, re.M)
    assert bool(measured) != ("keras-hub is not installed" in out), out
    assert re.search(r"^load average [\d.]+ at the end, \d+ CPU cores$", out, re.M), out
