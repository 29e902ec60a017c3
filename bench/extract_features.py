"""Feature-extraction throughput: model forward pass vs. writing the original's JSON lines.

    python bench/extract_features.py                    # BERT-Base shapes, random weights
    python bench/extract_features.py --num_hidden_layers=4 --hidden_size=256 --num_attention_heads=4
    python bench/extract_features.py --smoke   # tiny config, a few lines: that the bench still runs

Prints sequences/s of the encoder alone, lines/s of JSON formatting alone, and end-to-end
lines/s of `extract_features` + `feature_json_line`, all measured in this one run.
"""

import os
import sys
import time

import keras
import numpy as np
from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bert_tf from this checkout

from bert_tf import BertConfig, BertEncoder  # noqa: E402
from bert_tf.feature_extraction import Example, extract_features, feature_json_line, parse_layer_indexes  # noqa: E402
from bert_tf.models import INPUT_NAMES  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("hidden_size", 768, "")
flags.DEFINE_integer("num_hidden_layers", 12, "")
flags.DEFINE_integer("num_attention_heads", 12, "")
flags.DEFINE_integer("max_seq_length", 128, "")
flags.DEFINE_integer("batch_size", 32, "")
flags.DEFINE_integer("num_lines", 64, "")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "")
flags.DEFINE_boolean("smoke", False, "Tiny config, a few lines: checks that the bench still runs.")

SMOKE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "max_seq_length": 32, "batch_size": 4,
         "num_lines": 8, "layers": "-1,-2"}


class _WordTokenizer:
    """Every word is one in-vocabulary token: isolates model + JSON cost from tokenization."""

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [5 + len(t) for t in tokens]


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    keras.utils.set_random_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=FLAGS.hidden_size,
        num_hidden_layers=FLAGS.num_hidden_layers,
        num_attention_heads=FLAGS.num_attention_heads,
        intermediate_size=4 * FLAGS.hidden_size,
        type_vocab_size=2,
    )
    encoder = BertEncoder.from_bert_config(config)
    layers = parse_layer_indexes(FLAGS.layers, config.num_hidden_layers)
    seq, batch = FLAGS.max_seq_length, FLAGS.batch_size
    words = " ".join(["word"] * (seq - 2))
    examples = [Example(i, words) for i in range(FLAGS.num_lines)]

    inputs = {name: np.ones((batch, seq), np.int32) for name in INPUT_NAMES}
    encoder.predict_on_batch(inputs)  # compile
    start = time.perf_counter()
    steps = max(1, FLAGS.num_lines // batch)
    for _ in range(steps):
        encoder.predict_on_batch(inputs)
    model_rate = steps * batch / (time.perf_counter() - start)

    sample = {i: np.random.default_rng(0).standard_normal((seq, config.hidden_size)).astype(np.float32) for i in layers}
    tokens = ["tok"] * seq
    start = time.perf_counter()
    n = 8
    for _ in range(n):
        feature_json_line(0, tokens, sample)
    json_rate = n / (time.perf_counter() - start)

    start = time.perf_counter()
    count = 0
    for ex, toks, values in extract_features(encoder, _WordTokenizer(), examples, seq, layers, batch):
        feature_json_line(ex.unique_id, toks, values)
        count += 1
    total_rate = count / (time.perf_counter() - start)

    print(f"config: L={config.num_hidden_layers} H={config.hidden_size} A={config.num_attention_heads} "
          f"seq={seq} batch={batch} layers={FLAGS.layers} backend={keras.backend.backend()}")
    print(f"encoder forward only:   {model_rate:8.1f} sequences/s")
    print(f"JSON lines only:        {json_rate:8.1f} lines/s")
    print(f"end to end:             {total_rate:8.1f} lines/s "
          f"(JSON share of time: {total_rate / json_rate:.0%})")


if __name__ == "__main__":
    app.run(main)
