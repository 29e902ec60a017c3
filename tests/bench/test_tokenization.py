"""bench/tokenization.py in its smoke size: every contestant runs, and the in-graph BertTokenizer
gives FullTokenizer's ids on both texts (in a tf.function and in tf.data)."""

import re

import pytest

from tests.bench.smoke import run_bench

pytestmark = pytest.mark.slow


def test_smoke_run_compares_the_tokenizers():
    out = run_bench("tokenization.py", "--smoke")
    sections = re.split(r"^\n", out, flags=re.M)[1:]
    assert [s.splitlines()[0].split(":")[0] for s in sections] == ["English, uncased", "Unicode mix, uncased"]
    for section in sections:
        assert re.search(r"^  FullTokenizer \(Python, the original's rules\) +[\d.]+ MB/s$", section, re.M)
        for row in ("in a tf.function", "in tf.data, one pass, new iterator",
                    "in tf.data, per pass of an iterator kept"):
            assert re.search(rf"^  BertTokenizer {re.escape(row)} +[\d.]+ MB/s .*ids identical to FullTokenizer: "
                             "True$", section, re.M), section
        assert re.search(r"^  FastBertTokenizer \(tensorflow-text, reference\) +[\d.]+ MB/s", section, re.M)
