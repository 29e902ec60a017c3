"""The optimizer's step alone: AdamWeightDecay fused (TensorFlow's Adam kernel, the default on the
TensorFlow backend) against its keras.ops update (`fused=False`, the original's arithmetic exactly),
on the variables of a BERT pre-training model, global-norm clipping included, as the training loop
runs them (inside a tf.function).

    python bench/optimizer_step.py [--num_layers=4 --hidden_size=256 --num_heads=4
                                    --intermediate_size=1024 --vocab_size=30522 --steps=20 --rounds=3]
    python bench/optimizer_step.py --smoke  # tiny config, a few steps (the suite's)

The two take turns for --rounds rounds; the medians of ms per step are printed, and their ratio.
The weights after the same steps are compared as well: the fused kernel rounds (1 - beta_2) to
float32, so they differ slightly (optimizers.AdamWeightDecay says by how much).
"""

import os
import statistics
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/optimizer_step.py`: bert_tf from this checkout

import model_shape  # noqa: E402  (bench/, this script's folder)

from bert_tf.training.optimizers import create_optimizer  # noqa: E402
from bert_tf.training.pretraining import PretrainingTask  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("steps", 20, "Timed optimizer steps per round.")
flags.DEFINE_integer("rounds", 3, "Alternating rounds; medians are reported.")
flags.DEFINE_bool("smoke", False, "A tiny config and a few steps.")

SMOKE = {**model_shape.SMOKE, "steps": 3, "rounds": 1}


def stepper(fused, gradients):
    """(a tf.function making one clipped AdamWeightDecay step, the model's variables) for a new model."""
    config = model_shape.bert_config()
    keras.utils.set_random_seed(0)  # both start from the same weights
    variables = PretrainingTask(config).build_model().trainable_variables
    optimizer = create_optimizer("adamw", 1e-4, 1000, 10, global_clipnorm=None, fused=fused)
    optimizer.build(variables)
    values = gradients(variables)  # made here, eagerly: the step only reads them

    @tf.function
    def step():
        clipped, _ = tf.clip_by_global_norm(values, 1.0)  # as the training loop clips
        optimizer.apply(clipped, variables)

    step()  # traced
    return step, variables


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    generator = tf.random.Generator.from_seed(0)
    gradients = {}

    def fixed_gradients(variables):  # the same gradients for both, made once
        if not gradients:
            gradients["values"] = [generator.normal(v.shape) for v in variables]
        return gradients["values"]

    steppers = {name: stepper(fused, fixed_gradients) for name, fused in (("fused", True), ("keras.ops", False))}
    times = {name: [] for name in steppers}
    for _ in range(FLAGS.rounds):
        for name, (step, _) in steppers.items():
            start = time.perf_counter()
            for _ in range(FLAGS.steps):
                step()
            times[name].append(1000 * (time.perf_counter() - start) / FLAGS.steps)
    count = sum(int(np.prod(v.shape)) for v in steppers["fused"][1])
    print(f"config: {model_shape.described()}: "
          f"{len(steppers['fused'][1])} variables, {count:,} numbers; {os.cpu_count()} CPU cores, load average "
          f"{os.getloadavg()[0]:.1f}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"  {name:9s}: {medians[name]:8.2f} ms per step (rounds: {', '.join(f'{t:.2f}' for t in values)})")
    print(f"  keras.ops / fused: {medians['keras.ops'] / medians['fused']:.2f}x")
    fused, plain = ([v.numpy() for v in steppers[name][1]] for name in ("fused", "keras.ops"))
    difference = max(float(np.max(np.abs(a - b))) for a, b in zip(fused, plain, strict=True))
    print(f"  weights after {1 + FLAGS.rounds * FLAGS.steps} steps differ by {difference:.2e} at most")


if __name__ == "__main__":
    app.run(main)
