"""bench/pretraining.py in its smoke size: our loop trains, and its MFU is the rate times the
hand-counted FLOPs over the printed peak; transformers on PyTorch (the interoperability tests' peer
folder) trains in a process of its own, in float32 and under bfloat16 autocast, and gets its
ratios; keras-hub, not installed here, is skipped by name; --profile splits both float32 steps by
bench/step_profile.py's categories."""

import re

import pytest

from tests.bench.smoke import finished_bench, number, profile_table, run_bench
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


def test_profile_splits_both_float32_steps_by_the_same_categories(request, tmp_path_factory):
    peers = installed_peers(request, tmp_path_factory, "hf_peers")
    out = run_bench("pretraining.py", "--smoke", "--profile", f"--peer_dirs={peers}")
    assert re.search(r"^profile, float32, XLA off, 10 steps \(op times: bench/step_profile.py\); ours at [\d.]+ "
                     r"sequences/s without the profiler, MFU [\d.]+%:$", out, re.M), out
    values = profile_table(out)
    for side, name in enumerate(("bert_tf", "pytorch")):
        products = values["forward products"][side] + values["backward products"][side]
        share = number(rf"^  {name}: matrix products (\d+)% of its op time$", out)
        assert share == pytest.approx(100 * products / values["all ops"][side], abs=1), out
    assert "sequences/s (runs:" not in out  # no rounds
    refused = finished_bench("pretraining.py", "--smoke", "--profile", "--xla=false", "--rounds=2")
    assert refused.returncode != 0
    assert "--profile profiles one float32 pass without XLA: it takes no --xla, --rounds" in refused.stderr
