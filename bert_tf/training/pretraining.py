"""The pre-training loop behind run_pretraining.py: any tf.distribute strategy, gradient
accumulation, checkpoints that resume exactly, and the original's evaluation (TensorFlow).

Losses are normalised over the global batch (every replica and micro-batch): the masked-LM loss
is sum(weights * xent) / (sum(weights) + 1e-5) and the next-sentence loss the mean over all
examples, as the original computes them on one device. Summed gradients are therefore the
gradient of that global loss whatever the number of replicas or micro-batches; they are summed
across replicas, clipped to global norm 1.0 (the whole batch's gradient, as on one device) and
applied.
"""

import dataclasses
import math
import os
import shutil
import time

import keras
import numpy as np
import tensorflow as tf

from bert_tf import checkpoints
from bert_tf.data.pipelines import pretraining_dataset
from bert_tf.io_utils import atomic_write
from bert_tf.models import (
    MASKED_LM_DENOMINATOR_EPSILON,
    BertEncoder,
    BertPretrainer,
    masked_lm_xent,
    next_sentence_xent,
)
from bert_tf.training.optimizers import create_optimizer

CLIP_NORM = 1.0
_SUMS = ("mlm_loss_sum", "mlm_weight", "mlm_correct", "nsp_loss_sum", "nsp_correct", "examples")


@dataclasses.dataclass(frozen=True)
class PretrainingSettings:
    """The run's hyper-parameters (run_pretraining.py's flags, original names)."""

    output_dir: str
    train_batch_size: int = 32  # global, as in the original
    eval_batch_size: int = 8
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    max_eval_steps: int = 100
    optimizer: str = "adamw"
    gradient_accumulation_steps: int = 1
    steps_per_execution: int = 1
    keep_checkpoints: int = 5
    jit_compile: bool = False
    seed: int | None = None


def pretraining_sums(labels, outputs):
    """Per-batch sums from which every loss and metric of the original is computed."""
    logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
    ids = tf.cast(labels["masked_lm_ids"], tf.int32)
    weights = tf.cast(labels["masked_lm_weights"], tf.float32)
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), ids), tf.float32)
    nsp_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
    nsp_labels = tf.reshape(tf.cast(labels["next_sentence_labels"], tf.int32), [-1])
    nsp_correct = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32), nsp_labels), tf.float32)
    return {
        "mlm_loss_sum": tf.reduce_sum(weights * masked_lm_xent(logits, ids)),
        "mlm_weight": tf.reduce_sum(weights),
        "mlm_correct": tf.reduce_sum(weights * correct),
        "nsp_loss_sum": tf.reduce_sum(next_sentence_xent(nsp_logits, nsp_labels)),
        "nsp_correct": tf.reduce_sum(nsp_correct),
        "examples": tf.cast(tf.shape(nsp_labels)[0], tf.float32),
    }


def metrics_from_sums(sums):
    """The original's names and meanings (masked-LM metrics weighted by masked_lm_weights)."""
    w, n = max(float(sums["mlm_weight"]), 1e-12), max(float(sums["examples"]), 1e-12)
    return {
        "masked_lm_loss": float(sums["mlm_loss_sum"]) / w,
        "masked_lm_accuracy": float(sums["mlm_correct"]) / w,
        "next_sentence_loss": float(sums["nsp_loss_sum"]) / n,
        "next_sentence_accuracy": float(sums["nsp_correct"]) / n,
    }


class Pretraining:
    """Builds the model, optimizer and checkpoints for `settings` under `strategy`."""

    def __init__(self, bert_config, settings: PretrainingSettings, strategy):
        self.settings, self.strategy = settings, strategy
        replicas = strategy.num_replicas_in_sync
        k = settings.gradient_accumulation_steps
        if settings.train_batch_size % (replicas * k):
            raise ValueError(
                f"train_batch_size {settings.train_batch_size} is not divisible by "
                f"{replicas} replica(s) x {k} accumulation step(s)"
            )
        if settings.eval_batch_size % replicas:
            raise ValueError(f"eval_batch_size {settings.eval_batch_size} is not divisible by {replicas} replica(s)")
        if settings.max_seq_length > bert_config.max_position_embeddings:
            raise ValueError(
                f"max_seq_length {settings.max_seq_length} exceeds max_position_embeddings "
                f"{bert_config.max_position_embeddings}"
            )
        if settings.seed is not None:
            keras.utils.set_random_seed(settings.seed)
        with strategy.scope():
            self.model = BertPretrainer(BertEncoder.from_bert_config(bert_config))
            # Clipping happens after the cross-replica sum, in the loop, not per replica.
            self.optimizer = create_optimizer(
                settings.optimizer, settings.learning_rate, settings.num_train_steps, settings.num_warmup_steps, global_clipnorm=None
            )
            # float16 needs dynamic loss scaling (skips non-finite steps, adapts the scale).
            self.loss_scaling = keras.mixed_precision.global_policy().name == "mixed_float16"
            if self.loss_scaling:
                self.optimizer = keras.optimizers.LossScaleOptimizer(self.optimizer)
            self.optimizer.build(self.model.trainable_variables)
            # Batches read so far (a loss-scale skip reads data without advancing the step):
            # where a resumed run continues the data.
            self.consumed_batches = tf.Variable(0, dtype=tf.int64, trainable=False, name="consumed_batches")
        self._train_fn = None

    @property
    def global_step(self):
        return int(self.optimizer.iterations.numpy())

    # -----------------------------------------------------------------------------------------
    # Checkpoints

    def _checkpoint(self):
        return tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, consumed_batches=self.consumed_batches)

    @property
    def is_chief(self):
        """Multi-worker: only the chief writes to output_dir (worker 0 when there is no chief)."""
        resolver = getattr(self.strategy, "cluster_resolver", None)
        if resolver is None or not resolver.task_type:
            return True
        has_chief = "chief" in resolver.cluster_spec().as_dict()
        return resolver.task_type == "chief" or (not has_chief and resolver.task_type == "worker" and resolver.task_id == 0)

    def _checkpoint_dir(self):
        if self.is_chief:
            return self.settings.output_dir
        # Other workers must save too (the save is collective) but somewhere private.
        resolver = self.strategy.cluster_resolver
        return os.path.join(self.settings.output_dir, f".{resolver.task_type}_{resolver.task_id}")

    def manager(self):
        return tf.train.CheckpointManager(
            self._checkpoint(),
            directory=self._checkpoint_dir(),
            max_to_keep=self.settings.keep_checkpoints,
            checkpoint_name="ckpt",
        )

    def restore(self, init_checkpoint=None):
        """Resumes from the output folder's latest checkpoint (which wins, as in the original),
        else loads `init_checkpoint`: Google's original layout, another run's `ckpt-N` or a
        `.keras` file (weights only: the new run starts its own step count and schedule).
        Returns a line saying which."""
        latest = tf.train.latest_checkpoint(self.settings.output_dir)
        if latest:
            self._checkpoint().restore(latest).expect_partial()
            return f"resumed from {latest} at global step {self.global_step}"
        if init_checkpoint:
            report = checkpoints.restore(self.model, init_checkpoint)
            unused = f" ({len(report.unused)} unused variables)" if report is not None and report.unused else ""
            return f"initialised from {init_checkpoint}{unused}"
        return "initialised at random"

    # -----------------------------------------------------------------------------------------
    # Training

    def _dataset(self, files, is_training, skip_batches=0):
        s = self.settings
        batch = s.train_batch_size // s.gradient_accumulation_steps if is_training else s.eval_batch_size

        def make(context):
            return pretraining_dataset(
                files,
                context.get_per_replica_batch_size(batch),
                s.max_seq_length,
                s.max_predictions_per_seq,
                is_training,
                input_context=context,
                seed=s.seed,
                skip_batches=skip_batches,
            )

        return self.strategy.distribute_datasets_from_function(make)

    def _replica_step(self, batches):
        ctx = tf.distribute.get_replica_context()
        variables = self.model.trainable_variables
        total_weight = ctx.all_reduce("sum", tf.add_n([tf.reduce_sum(y["masked_lm_weights"]) for _, y in batches]))
        examples = float(self.settings.train_batch_size)

        @tf.function(jit_compile=self.settings.jit_compile)
        def gradients(x, y):
            with tf.GradientTape() as tape:
                sums = pretraining_sums(y, self.model(x, training=True))
                loss = sums["mlm_loss_sum"] / (total_weight + MASKED_LM_DENOMINATOR_EPSILON) + sums["nsp_loss_sum"] / examples
                if self.loss_scaling:
                    loss = self.optimizer.scale_loss(loss)
            return [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)], sums

        grads, sums = None, None
        for x, y in batches:
            g, s = gradients(x, y)
            grads = g if grads is None else [a + b for a, b in zip(grads, g, strict=True)]
            sums = s if sums is None else {k: sums[k] + s[k] for k in _SUMS}
        grads = ctx.all_reduce("sum", grads)
        if self.loss_scaling:  # clip the true gradient; the loss-scale optimizer unscales again
            scale = tf.cast(self.optimizer.dynamic_scale, tf.float32)
            grads, _ = tf.clip_by_global_norm([g / scale for g in grads], CLIP_NORM)
            grads = [g * scale for g in grads]
        else:
            grads, _ = tf.clip_by_global_norm(grads, CLIP_NORM)
        # Keras sums the replicas' gradients again inside apply(): hand it equal shares of the
        # clipped global gradient (one more all-reduce, of identical values, is the price).
        if ctx.num_replicas_in_sync > 1:
            grads = [g / float(ctx.num_replicas_in_sync) for g in grads]
        self.optimizer.apply(grads, variables)
        return sums

    def _make_train_fn(self):
        k = self.settings.gradient_accumulation_steps

        @tf.function
        def train(iterator, steps):
            totals = {name: tf.constant(0.0) for name in _SUMS}
            for _ in tf.range(steps):
                batches = [next(iterator) for _ in range(k)]
                per_replica = self.strategy.run(self._replica_step, args=(batches,))
                self.consumed_batches.assign_add(k)
                totals = {n: totals[n] + self.strategy.reduce("sum", per_replica[n], axis=None) for n in _SUMS}
            return totals

        return train

    def train(self, train_files, init_checkpoint=None, on_log=None, summary_dir=None):
        """Trains to num_train_steps, saving every save_checkpoints_steps; returns (message of
        how it started, final step). Started again on the same output_dir it resumes from the
        latest checkpoint: same step, optimizer state and schedule, and (with a seed) the data
        exactly where it was. `on_log(step, logs)` receives losses, accuracies, learning
        rate and sequences/s after each execution. A non-finite loss stops the run with an
        error naming the step; the last checkpoint is the last good one."""
        s = self.settings
        manager = self.manager()
        started = self.restore(init_checkpoint)
        # With a seed the data order is reproducible: a resumed run continues it exactly.
        consumed = int(self.consumed_batches.numpy()) if s.seed is not None else 0
        iterator = iter(self._dataset(train_files, is_training=True, skip_batches=consumed))
        train_fn = self._train_fn = self._train_fn or self._make_train_fn()
        writer = tf.summary.create_file_writer(
            summary_dir or os.path.join(self._checkpoint_dir(), "train")
        )
        while self.global_step < s.num_train_steps:
            step = self.global_step
            boundary = (step // s.save_checkpoints_steps + 1) * s.save_checkpoints_steps
            steps = min(s.steps_per_execution, s.num_train_steps - step, boundary - step)
            start = time.perf_counter()
            sums = {k: float(v) for k, v in train_fn(iterator, tf.constant(steps)).items()}
            elapsed = time.perf_counter() - start
            step = self.global_step
            logs = metrics_from_sums(sums)
            logs["loss"] = logs["masked_lm_loss"] + logs["next_sentence_loss"]
            if not all(math.isfinite(v) for v in logs.values()):
                raise FloatingPointError(
                    f"the loss became {logs['loss']} at step {step}; stopped without saving. "
                    f"The last good checkpoint is {manager.latest_checkpoint}"
                )
            logs["learning_rate"] = float(self.optimizer.learning_rate)
            logs["sequences_per_second"] = steps * s.train_batch_size / max(elapsed, 1e-9)
            with writer.as_default(step=step):
                for name, value in logs.items():
                    tf.summary.scalar(name, value)
            if on_log:
                on_log(step, logs)
            if step % s.save_checkpoints_steps == 0 or step >= s.num_train_steps:
                manager.save(checkpoint_number=step)
        writer.flush()
        if not self.is_chief:
            shutil.rmtree(self._checkpoint_dir(), ignore_errors=True)
        return started, self.global_step

    # -----------------------------------------------------------------------------------------
    # Evaluation

    def evaluate(self, eval_files, summary_dir=None):
        """The original's eval over at most max_eval_steps batches, files read in order. Writes
        eval_results.txt (`key = value`, sorted, as the original) and returns the dict."""
        s = self.settings

        @tf.function
        def step_fn(x, y):
            return pretraining_sums(y, self.model(x, training=False))

        totals, batch_losses, steps = {k: 0.0 for k in _SUMS}, [], 0
        for x, y in self._dataset(eval_files, is_training=False):
            if steps >= s.max_eval_steps:
                break
            per_replica = self.strategy.run(step_fn, args=(x, y))
            sums = {k: float(self.strategy.reduce("sum", per_replica[k], axis=None)) for k in _SUMS}
            totals = {k: totals[k] + sums[k] for k in _SUMS}
            # The original's `loss` is the mean over batches of each batch's total loss.
            batch_losses.append(sums["mlm_loss_sum"] / (sums["mlm_weight"] + MASKED_LM_DENOMINATOR_EPSILON) + sums["nsp_loss_sum"] / sums["examples"])
            steps += 1
        if not steps:
            raise ValueError(f"no full eval batch of {s.eval_batch_size} in {eval_files}")
        results = metrics_from_sums(totals)
        results["loss"] = float(np.mean(batch_losses))
        results["global_step"] = self.global_step
        if not self.is_chief:
            return results
        with atomic_write(os.path.join(s.output_dir, "eval_results.txt")) as f:
            for key in sorted(results):
                value = results[key]
                f.write(f"{key} = {value if isinstance(value, int) else str(np.float32(value))}\n")
        writer = tf.summary.create_file_writer(summary_dir or os.path.join(s.output_dir, "eval"))
        with writer.as_default(step=self.global_step):
            for name, value in results.items():
                if name != "global_step":
                    tf.summary.scalar(name, value)
        writer.flush()
        return results
