"""What skipping a batch's padding (`bert_tf.models.padding_skipped`) buys: a BertClassifier's
training step and its inference call on one batch whose texts have different lengths, with the
padding skipped and without, taking turns in one process (the same weights, batch and threads).

    python bench/skip_padding.py [--num_layers=12 --hidden_size=768 --num_heads=12
                                  --intermediate_size=3072 --batch_size=32 --lengths=8-20,20-34
                                  --calls=5 --threads=N]
    python bench/skip_padding.py --smoke  # tiny config, two calls (the suite's)

Each --lengths range L1-L2 is one batch: --batch_size texts of random lengths from L1 to L2 word
pieces (seed 0), cut to the longest, so the rest is padding (its share is printed). The training
step is the run_classifier loop's arithmetic in small: the forward pass with dropout, the
cross-entropy, its gradient and an SGD update (plain SGD, so that the optimizer's own cost, which
does not follow the tokens, does not hide the model's). Medians over --calls calls of each, after
one call each that traces; the ratios skipped / not are what the README quotes.
"""

import os
import re
import statistics
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/skip_padding.py`: bert_tf from this checkout

import model_shape  # noqa: E402  (bench/, this script's folder)

from bert_tf import BertClassifier, BertEncoder  # noqa: E402
from bert_tf.models import padding_skipped  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch_size", 32, "Texts per batch.", lower_bound=1)
flags.DEFINE_list("lengths", ["8-20", "20-34"], "Batches: the range of their texts' lengths in word pieces.")
flags.register_validator(
    "lengths", lambda v: all(re.fullmatch(r"(\d+)-(\d+)", r) and 1 <= int(r.split("-")[0]) <= int(r.split("-")[1])
                             <= 512 for r in v),
    "must be ranges LOW-HIGH of word pieces, 1 <= LOW <= HIGH <= 512 (BERT's positions), e.g. 8-20,20-34")
flags.DEFINE_integer("calls", 5, "Timed calls of each function per batch.", lower_bound=1)
flags.DEFINE_integer("threads", os.cpu_count(), "TensorFlow's intra-op threads.")
flags.DEFINE_bool("smoke", False, "A tiny config and two calls.")

BASE = {"num_layers": 12, "hidden_size": 768, "num_heads": 12, "intermediate_size": 3072}
SMOKE = {**model_shape.SMOKE, "calls": 2, "batch_size": 4, "lengths": ["3-9"]}


def batch(low, high, vocab_size, rng):
    """`(inputs, labels)`: --batch_size texts of low..high random ids, cut to the longest."""
    lengths = rng.integers(low, high + 1, FLAGS.batch_size)
    mask = (np.arange(lengths.max())[None, :] < lengths[:, None]).astype(np.int32)
    ids = mask * rng.integers(5, vocab_size, mask.shape).astype(np.int32)
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(mask)}
    return {k: tf.constant(v) for k, v in inputs.items()}, tf.constant(rng.integers(0, 2, FLAGS.batch_size))


def functions(model, skip):
    """`(train_step, infer)`, traced with the padding skipped or not."""
    optimizer = keras.optimizers.SGD(1e-3)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            with padding_skipped(model, skip):
                logits = model(x, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    @tf.function
    def infer(x):
        with padding_skipped(model, skip):
            return model(x, training=False)

    return train_step, infer


def main(argv):
    del argv
    for name, value in (SMOKE if FLAGS.smoke else BASE).items():
        if FLAGS.smoke or not FLAGS[name].present:
            setattr(FLAGS, name, value)
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    keras.utils.set_random_seed(0)
    config = model_shape.bert_config()
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    sides = {skip: functions(model, skip) for skip in (False, True)}
    print(f"config: {model_shape.described()} batch={FLAGS.batch_size}, fp32, {FLAGS.threads} threads", flush=True)
    rng = np.random.default_rng(0)
    for lengths in FLAGS.lengths:
        low, high = (int(v) for v in lengths.split("-"))
        x, y = batch(low, high, config.vocab_size, rng)
        times = {}
        for _ in range(FLAGS.calls + 1):  # the first call of each traces: not counted
            for skip, (train_step, infer) in sides.items():
                for name, fn, args in (("train", train_step, (x, y)), ("infer", infer, (x,))):
                    start = time.perf_counter()
                    fn(*args)
                    times.setdefault((name, skip), []).append(time.perf_counter() - start)
        ms = {key: statistics.median(values[1:]) * 1e3 for key, values in times.items()}
        real = float(tf.reduce_mean(tf.cast(x["input_mask"], tf.float32)))
        print(f"lengths {low}-{high} (longest {x['input_mask'].shape[1]}, {real:.0%} real tokens):")
        for name in ("train", "infer"):
            # To the microsecond: the smoke size's times are fractions of a millisecond.
            print(f"  {name}: skipped {ms[name, True]:.3f} ms, not {ms[name, False]:.3f} ms, "
                  f"skipped / not {ms[name, True] / ms[name, False]:.3f}x", flush=True)


if __name__ == "__main__":
    app.run(main)
