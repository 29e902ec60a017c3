"""bench/sentence_embedding.py in its smoke size, with sentence-transformers and PyTorch from the
peers' folders: both sides embed the same sentences alike (within 1e-5) and report their rates,
latencies and the ratio."""

import re

import pytest

from tests.bench.smoke import number, run_bench
from tests.peers import installed_peers

pytestmark = pytest.mark.slow


def test_smoke_run_measures_our_export_beside_sentence_transformers(request, tmp_path_factory):
    peers = [installed_peers(request, tmp_path_factory, name) for name in ("st_peers", "hf_peers")]
    out = run_bench("sentence_embedding.py", "--smoke", f"--peer_dirs={','.join(map(str, peers))}")
    assert re.search(r"^config: L=2 H=32 A=2 I=64 vocab=30522, mean pooling \+ Normalize, max length 32; batch 8; "
                     r"\d+ threads each side; text: data/corpus.txt's \d+ sentences, [\d.]+ words on average; "
                     r"export flags: the defaults$", out, re.M), out
    assert number(r"^agreement: max \|ours - sentence-transformers \(PyTorch\)\| = ([\d.e+-]+) over 64", out) <= 1e-5
    for label in ("bert_tf export \\(text in\\)", "sentence-transformers \\(PyTorch\\)"):
        assert re.search(rf"^  {label} +: +[\d.]+ seq/s at batch 8; batch 1 p50 [\d.]+ ms, p99 [\d.]+ ms", out, re.M)
    assert re.search(r"^  ours / sentence-transformers \(PyTorch\): [\d.]+x the throughput, batch-1 p50 [\d.]+x",
                     out, re.M), out
    assert "Batches:" not in out  # no progress bars

