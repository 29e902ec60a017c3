"""Tokenization throughput: FullTokenizer (Python) vs the in-graph BertTokenizer, same text.

    python bench/tokenization.py [--vocab_file=...] [--do_lower_case=true] [--repeat=20]

Text: data/corpus.txt plus standard-library docstrings (English prose), repeated `--repeat`
times. Prints MB/s and tokens/s of each, their ratio, and whether the ids are identical.
"""

import importlib
import inspect
import os
import time

import tensorflow as tf
from absl import app, flags

from bert_tf.preprocessing import BertTokenizer
from bert_tf.tokenization import FullTokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_string("vocab_file", os.path.join(REPO, "data", "vocab.txt"), "")
flags.DEFINE_bool("do_lower_case", True, "")
flags.DEFINE_integer("repeat", 20, "How many times the text is repeated.")
flags.DEFINE_integer("batch_size", 1024, "Lines per in-graph call.")


def _text():
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    for name in ("argparse", "collections", "json", "logging", "pathlib", "re", "subprocess", "typing"):
        module = importlib.import_module(name)
        for member in [module, *vars(module).values()]:
            doc = inspect.getdoc(member) if (inspect.ismodule(member) or inspect.isclass(member)) else None
            if doc:
                lines.extend(line.strip() for line in doc.splitlines() if line.strip())
    return lines


def main(argv):
    del argv
    lines = _text() * FLAGS.repeat
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6

    python = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    start = time.perf_counter()
    expected = [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines]
    python_s = time.perf_counter() - start

    layer = BertTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    tokenize = tf.function(lambda batch: layer(batch), input_signature=[tf.TensorSpec([None], tf.string)])
    batches = [tf.constant(lines[i : i + FLAGS.batch_size]) for i in range(0, len(lines), FLAGS.batch_size)]
    tokenize(batches[0])  # trace once
    start = time.perf_counter()
    outputs = [tokenize(b) for b in batches]
    graph_s = time.perf_counter() - start
    got = [row for out in outputs for row in out.to_list()]

    num_tokens = sum(len(ids) for ids in expected)
    print(f"text: {len(lines)} lines, {megabytes:.2f} MB, {num_tokens} tokens; do_lower_case={FLAGS.do_lower_case}")
    print(f"FullTokenizer (Python):   {megabytes / python_s:7.2f} MB/s {num_tokens / python_s:11.0f} tokens/s")
    print(f"BertTokenizer (in graph): {megabytes / graph_s:7.2f} MB/s {num_tokens / graph_s:11.0f} tokens/s")
    print(f"speed-up: {python_s / graph_s:.1f}x; identical ids: {got == expected}")


if __name__ == "__main__":
    app.run(main)
