"""The one training loop: pre-training and every fine-tuning task (TensorFlow).

Any tf.distribute strategy, gradient accumulation, the global-norm clip of the original, checkpoints
that resume exactly, a NaN/Inf stop, TensorBoard scalars, evaluation and prediction, the batches'
padding skipped (`settings.skip_padding`). The task (`bert_tf.training.task.Task`) supplies the
model, the data, the loss and the metrics.

Losses are normalised over the global batch (every replica and micro-batch): the task divides
its per-batch sums by `normalizers` summed over the whole batch before the step, as the
original computes them on one device. Summed gradients are therefore the gradient of that
global loss whatever the number of replicas or micro-batches; they are summed across replicas,
clipped to global norm 1.0 (the whole batch's gradient, as on one device) and applied.
"""

import os
import shutil
import time

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.restore import check_model_finite
from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write
from bert_tf.models import lora, padding_skipped
from bert_tf.training.divergence import (
    FINITE,
    Diverged,
    finite_rows,
    stop_unless_finite,
    stop_unless_outputs_finite,
)
from bert_tf.training.optimizers import create_optimizer
from bert_tf.training.restore_status import INITIALISED, RANDOM, RESUMED, RestoreStatus
from bert_tf.training.settings import TrainingSettings, check_batch_sizes, check_weights_may_change

__all__ = ["CLIP_NORM", "Diverged", "RestoreStatus", "Trainer", "TrainingSettings", "check_batch_sizes"]

CLIP_NORM = 1.0

# Added to a replica's dropout seeds (times its replica id): a large odd number, so that no two
# replicas draw from the same stream.
_REPLICA_SEED_STRIDE = 0x9E3779B1


def per_example_outputs(strategy, batches, replica_fn, count):
    """Runs `replica_fn(batch)` on every replica's batch of the distributed dataset `batches`
    (ordered as `bert_tf.data.batching.ordered_batches` orders them) and gathers its per-example
    tensors in input order.

    Args:
        strategy: The tf.distribute strategy `batches` is distributed by.
        batches: A distributed dataset of whole batches.
        replica_fn: A function of one replica's batch returning a dict of tensors `[rows, ...]`;
            traced once, for the batches' spec (their lengths unknown).
        count: How many examples there are (the rows past them pad the last global batch).

    Returns:
        A dict: name -> numpy array `[count, ...]`; None where `batches` gives no batch.
    """

    @tf.function(input_signature=[batches.element_spec], autograph=False)
    def step(batch):
        return _gathered(strategy, strategy.run(replica_fn, args=(batch,)))

    out = [{k: v.numpy() for k, v in step(batch).items()} for batch in batches]
    if not out:
        return None
    return {k: np.concatenate([o[k] for o in out])[:count] for k in out[0]}


def _gathered(strategy, per_replica):
    """A dict of per-replica tensors, each gathered along its first axis in replica order."""
    return {k: strategy.gather(v, axis=0) for k, v in per_replica.items()}


def _add(a, b):
    return {k: a[k] + b[k] for k in a}


def _is_seed_state(variable):
    return variable.path.endswith("seed_generator_state")


def _seed_states_per_replica(next_creator, **kwargs):
    """Keras keeps each dropout layer's seed in a variable that a strategy would mirror: every
    replica would then draw the same masks for its part of the batch. Made sync-on-read, each
    replica keeps (and advances) a copy of its own; checkpoints save replica 0's."""
    if (kwargs.get("name") or "").startswith("seed_generator_state"):
        kwargs["synchronization"] = tf.VariableSynchronization.ON_READ
        kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
    return next_creator(**kwargs)


class Trainer:
    """The one training loop: trains, evaluates and predicts with `task`'s model under `strategy`.

    The constructor checks the batch sizes against the strategy's replicas, sets Keras' random
    seed (when `settings.seed` is given), builds the model under the strategy (each replica with
    dropout seeds of its own), and creates the optimizer `settings.optimizer` on the original's
    schedule, wrapped in a `keras.optimizers.LossScaleOptimizer` under the `mixed_float16`
    policy. Gradients are clipped to `CLIP_NORM` in the loop, after the sum across replicas.

    Args:
        task: The `bert_tf.training.task.Task` that supplies the model, the data, the loss and
            the metrics.
        settings: The run's `TrainingSettings`.
        strategy: The `tf.distribute.Strategy` to train under.

    Raises:
        ValueError: A batch size does not divide over the replicas, or
            `gradient_accumulation_steps` is not a positive integer (see `check_batch_sizes`).
    """

    def __init__(self, task, settings: TrainingSettings, strategy):
        self.task, self.settings, self.strategy = task, settings, strategy
        check_batch_sizes(settings, strategy.num_replicas_in_sync)
        if settings.seed is not None:
            keras.utils.set_random_seed(settings.seed)
        with strategy.scope():
            with tf.variable_creator_scope(_seed_states_per_replica):
                self.model = task.build_model()
            self._spread_dropout_seeds()
            # Clipping happens after the cross-replica sum, in the loop, not per replica.
            self.optimizer = create_optimizer(settings.optimizer, settings.learning_rate, settings.num_train_steps,
                                              settings.num_warmup_steps, global_clipnorm=None)
            # float16 needs dynamic loss scaling (skips non-finite steps, adapts the scale).
            self.loss_scaling = keras.mixed_precision.global_policy().name == "mixed_float16"
            if self.loss_scaling:
                self.optimizer = keras.optimizers.LossScaleOptimizer(self.optimizer)
            if not settings.lora_rank:  # with LoRA, once the initial weights are in (`_finish_model`)
                self.optimizer.build(self.model.trainable_variables)
            # Batches read so far (a loss-scale skip reads data without advancing the step):
            # where a resumed run continues the data.
            self.consumed_batches = tf.Variable(0, dtype=tf.int64, trainable=False, name="consumed_batches")
        self._train_fn = None

    def _finish_model(self):
        """With LoRA, once, after the initial weights and before a checkpoint of the run is read:
        the adapters (the weights just loaded are their base) and the optimizer's state for the
        variables that train (without LoRA, built with the trainer)."""
        if self.optimizer.built:
            return
        with self.strategy.scope():
            if self.settings.lora_rank:
                lora.enable_lora(self.model, self.settings.lora_rank, self.settings.lora_alpha)
            self.optimizer.build(self.model.trainable_variables)

    def parameters(self):
        """Says how many of the model's weights train.

        Returns:
            The line `Trainable parameters: T of N (P%)`: with LoRA, T counts the adapters and
            the head, and N all weights with the adapters.
        """
        trainable, total = lora.parameter_counts(self.model)
        return f"Trainable parameters: {trainable:,} of {total:,} ({100 * trainable / max(total, 1):.2f}%)"

    def _dropout_seeds(self):
        # In the model's own order (their paths carry process-wide counters).
        return [v for v in self.model.non_trainable_variables if _is_seed_state(v)]

    def _spread_dropout_seeds(self):
        """Offsets each replica's dropout seeds by its replica id (from replica 0's, which is
        what a checkpoint holds), so that replicas draw different masks, reproducibly."""
        if self.strategy.num_replicas_in_sync == 1:
            return
        seeds = self._dropout_seeds()

        def offset():
            replica = tf.distribute.get_replica_context().replica_id_in_sync_group
            for v in seeds:
                v.assign_add(tf.stack([tf.cast(replica, v.dtype) * _REPLICA_SEED_STRIDE, tf.constant(0, v.dtype)]))

        self.strategy.run(tf.function(offset, autograph=False))

    @property
    def global_step(self):
        """The model's global step (the optimizer's iteration count), as a Python int."""
        return int(self.optimizer.iterations.numpy())

    # -----------------------------------------------------------------------------------------
    # Checkpoints

    def _checkpoint(self):
        # The dropout layers' seed-generator states are Keras variables that TensorFlow's object
        # graph does not reach through the model: saved beside it, a resumed run draws the same
        # dropout masks as an uninterrupted one.
        return tf.train.Checkpoint(
            model=self.model, optimizer=self.optimizer, consumed_batches=self.consumed_batches,
            dropout_seeds=self._dropout_seeds(),
        )

    @property
    def is_chief(self):
        """Multi-worker: only the chief writes to output_dir (worker 0 when there is no chief)."""
        resolver = getattr(self.strategy, "cluster_resolver", None)
        if resolver is None or not resolver.task_type:
            return True
        has_chief = "chief" in resolver.cluster_spec().as_dict()
        return resolver.task_type == "chief" or (
            not has_chief and resolver.task_type == "worker" and resolver.task_id == 0
        )

    def _checkpoint_dir(self):
        if self.is_chief:
            return self.settings.output_dir
        # Other workers must save too (the save is collective) but somewhere private.
        resolver = self.strategy.cluster_resolver
        return os.path.join(self.settings.output_dir, f".{resolver.task_type}_{resolver.task_id}")

    def manager(self):
        """Creates the run's checkpoint manager.

        Its checkpoints hold the model, the optimizer's state, the batches consumed and the
        dropout layers' seeds, so that a resumed run continues exactly.

        Returns:
            A `tf.train.CheckpointManager` writing `ckpt-N` in `output_dir` (on a worker other
            than the chief, in a private folder inside it), keeping the last
            `settings.keep_checkpoints`.
        """
        return tf.train.CheckpointManager(
            self._checkpoint(),
            directory=self._checkpoint_dir(),
            max_to_keep=self.settings.keep_checkpoints,
            checkpoint_name="ckpt",
        )

    def restore(self, init_checkpoint=None) -> RestoreStatus:
        """Gives the model its starting weights: the run's own latest checkpoint, else `init_checkpoint`.

        The latest checkpoint in `output_dir` wins, as in the original: the run resumes with its
        step, optimizer state and count of batches consumed. Otherwise `init_checkpoint` is loaded through
        the task's `restore` (weights only: the new run starts its own step count and schedule).
        Otherwise the model stays at random. With LoRA, the adapters are added after the initial
        weights are in.

        Args:
            init_checkpoint: The weights to start from when `output_dir` holds no checkpoint
                (anything the task's `restore` reads); None: start at random.

        Returns:
            A `RestoreStatus` saying what happened.

        Raises:
            ValueError: The latest checkpoint in `output_dir` holds another model than this
                run's, is damaged, or holds a weight that is NaN or infinite.
        """
        latest = tf.train.latest_checkpoint(self.settings.output_dir)
        if latest:
            self._finish_model()  # the checkpoint holds the adapters and the optimizer's state
            try:
                self._checkpoint().restore(latest).expect_partial()
            except (tf.errors.OpError, IndexError, ValueError) as e:
                raise ValueError(
                    f"cannot resume from {latest}, the latest checkpoint in {shown.output_dir} "
                    f"{self.settings.output_dir!r}: "
                    f"{type(e).__name__}: {str(e).splitlines()[0]}. It holds another model than this run's (give the "
                    f"run's own config and settings, or use another {shown.output_dir}), or it is damaged (then "
                    f"delete it)"
                ) from None
            check_model_finite(self.model, latest)  # a damaged file would go on computing NaN
            self._spread_dropout_seeds()  # the checkpoint holds replica 0's
            return RestoreStatus(RESUMED, latest, self.global_step)
        if init_checkpoint:
            report = self.task.restore(self.model, init_checkpoint)
            self._finish_model()
            if report is None:
                return RestoreStatus(INITIALISED, init_checkpoint, self.global_step)
            return RestoreStatus(
                INITIALISED, init_checkpoint, self.global_step, len(report.unused), tuple(report.not_found)
            )
        self._finish_model()
        return RestoreStatus(RANDOM, None, self.global_step)

    # -----------------------------------------------------------------------------------------
    # Training

    def _forward(self, x, training):  # traced in the context: the graph keeps skipping the padding
        with padding_skipped(self.model, self.settings.skip_padding):
            return self.task.call_model(self.model, x, training)

    def _distribute(self, data, mode, global_batch, skip_batches=0):
        def make(context):
            # `skip_batches` counts per-replica micro-batches of one replica; a pipeline feeds
            # all of its replicas, one batch each per micro-batch.
            local_replicas = context.num_replicas_in_sync // context.num_input_pipelines
            return self.task.dataset(
                data,
                mode,
                context.get_per_replica_batch_size(global_batch),
                input_context=context,
                seed=self.settings.seed,
                skip_batches=skip_batches * local_replicas,
            )

        return self.strategy.distribute_datasets_from_function(make)

    def _replica_step(self, batches):
        ctx = tf.distribute.get_replica_context()
        variables = self.model.trainable_variables
        normalizers = self.task.normalizers(batches[0][1])
        for _, y in batches[1:]:
            normalizers = _add(normalizers, self.task.normalizers(y))
        normalizers = ctx.all_reduce("sum", normalizers) if normalizers else {}

        # Variables the loss does not reach (the pooler under a span or token head) get no
        # update at all, as the original skips None gradients: no weight decay either.
        used = []

        # Traced once for batches of any length (their spec leaves it unknown); XLA compiles each length once.
        @tf.function(jit_compile=self.settings.jit_compile, autograph=False)
        def gradients(x, y):
            with tf.GradientTape() as tape:
                sums = self.task.sums(y, self._forward(x, training=True))
                loss = self.task.loss(sums, normalizers)
                if self.loss_scaling:
                    loss = self.optimizer.scale_loss(loss)
            grads = tape.gradient(loss, variables)
            used[:] = [g is not None for g in grads]  # known when traced
            return [tf.convert_to_tensor(g) for g in grads if g is not None], sums

        grads, sums = None, None
        for x, y in batches:
            g, s = gradients(x, y)
            grads = g if grads is None else [a + b for a, b in zip(grads, g, strict=True)]
            sums = s if sums is None else _add(sums, s)
        variables = [v for v, u in zip(variables, used, strict=True) if u]
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
        names = self.task.sum_names

        @tf.function(autograph=False)  # nothing it calls branches on a tensor: no conversion to pay for
        def train(iterator, steps):
            def step(i, totals):
                batches = [next(iterator) for _ in range(k)]
                per_replica = self.strategy.run(self._replica_step, args=(batches,))
                self.consumed_batches.assign_add(k)
                return i + 1, {n: totals[n] + self.strategy.reduce("sum", per_replica[n], axis=None) for n in names}

            return tf.while_loop(lambda i, _: i < steps, step, (0, {n: tf.constant(0.0) for n in names}))[1]

        return train

    def train(self, train_data, init_checkpoint=None, on_log=None, summary_dir=None, on_start=None):
        """Trains the model to `settings.num_train_steps`, with checkpoints and TensorBoard scalars.

        A checkpoint is saved every `settings.save_checkpoints_steps` and at the end. Started again
        on the same `output_dir`, the run resumes from the latest checkpoint: same step, optimizer
        state and schedule, and (with a seed) the data exactly where it was. Each execution runs
        up to `settings.steps_per_execution` steps; its logs are written as TensorBoard scalars
        after it. A non-finite loss, or weights about to be saved, stops the run naming the step:
        no checkpoint it saves holds a NaN or an Inf. A worker other than the chief removes its
        private checkpoint folder at the end.

        Args:
            train_data: The training data, as the task's `dataset` reads it.
            init_checkpoint: The weights to start from when `output_dir` holds no checkpoint
                (see `restore`); None: start at random.
            on_log: None, or `on_log(step, logs)`, called after each execution with the global
                step and a dict: the task's training figures (its loss and metrics), and the
                floats `learning_rate` and `examples_per_second`.
            summary_dir: The folder of the TensorBoard scalars; None: `train` in the checkpoint
                folder.
            on_start: None, or `on_start()`, called once the model is ready, before the first step.

        Returns:
            `(started, step)`: the `RestoreStatus` the run started from, and the final global step.

        Raises:
            Diverged: The loss, or the weights about to be saved, became NaN or Inf.
            ValueError: This process's oneDNN keeps its products' first weights
                (`check_weights_may_change`), or the latest checkpoint cannot be resumed (see
                `restore`).
        """
        check_weights_may_change()
        s = self.settings
        started = self.restore(init_checkpoint)
        manager = self.manager()
        if on_start:
            on_start()
        # With a seed the data order is reproducible: a resumed run continues it exactly.
        consumed = int(self.consumed_batches.numpy()) if s.seed is not None else 0
        batch = s.train_batch_size // s.gradient_accumulation_steps
        iterator = iter(self._distribute(train_data, "train", batch, skip_batches=consumed))
        train_fn = self._train_fn = self._train_fn or self._make_train_fn()
        writer = tf.summary.create_file_writer(summary_dir or os.path.join(self._checkpoint_dir(), "train"))
        while self.global_step < s.num_train_steps:
            step = self.global_step
            boundary = (step // s.save_checkpoints_steps + 1) * s.save_checkpoints_steps
            steps = min(s.steps_per_execution, s.num_train_steps - step, boundary - step)
            start = time.perf_counter()
            sums = {k: float(v) for k, v in train_fn(iterator, tf.constant(steps)).items()}
            elapsed = time.perf_counter() - start
            step = self.global_step
            figures = self.task.train_logs(sums)
            stop_unless_finite(figures, step, manager)
            logs = dict(figures)
            logs["learning_rate"] = float(self.optimizer.learning_rate)
            logs["examples_per_second"] = steps * s.train_batch_size / max(elapsed, 1e-9)
            with writer.as_default(step=step):
                for name, value in logs.items():
                    tf.summary.scalar(name, value)
            if on_log:
                on_log(step, logs)
            if step % s.save_checkpoints_steps == 0 or step >= s.num_train_steps:
                stop_unless_finite(figures, step, manager, self.model.trainable_variables)
                manager.save(checkpoint_number=step)
        writer.flush()
        if not self.is_chief:
            shutil.rmtree(self._checkpoint_dir(), ignore_errors=True)
        return started, self.global_step

    # -----------------------------------------------------------------------------------------
    # Evaluation and prediction

    def evaluate(self, eval_data, max_steps=None):
        """Evaluates the model with the task's metrics over `eval_data`.

        It writes nothing (see `write_eval_results`). Outputs or losses that hold a NaN or an
        Inf are an error: no figure is computed from them.

        Args:
            eval_data: The evaluation data, as the task's `dataset` reads it.
            max_steps: At most this many global batches; None: the settings' `max_eval_steps`
                (where that is None too, all of them).

        Returns:
            The task's `eval_results` dict, with `global_step` (the model's step) added.

        Raises:
            ValueError: Not one batch was evaluated (no full batch in `eval_data`, or
                `max_steps` 0).
            Diverged: The task's or the model's outputs, or a batch's loss, hold a NaN or an Inf.
        """
        s = self.settings
        task = self.task
        max_steps = s.max_eval_steps if max_steps is None else max_steps

        batches = self._distribute(eval_data, "eval", s.eval_batch_size)

        # Traced once, for the data's spec: batches cut to their length come in several shapes.
        @tf.function(input_signature=list(batches.element_spec), autograph=False)
        def step(x, y):
            def replica(x, y):
                outputs = self._forward(x, training=False)
                per_example = {**task.eval_outputs(y, outputs), FINITE: finite_rows(outputs)}
                return task.sums(y, outputs), task.normalizers(y), per_example

            sums, normalizers, per_example = self.strategy.run(replica, args=(x, y))
            reduce = lambda d: {k: self.strategy.reduce("sum", v, axis=None) for k, v in d.items()}  # noqa: E731
            return reduce(sums), reduce(normalizers), _gathered(self.strategy, per_example)

        totals, gathered, batch_losses, steps = None, [], [], 0
        for x, y in batches:
            if max_steps is not None and steps >= max_steps:
                break
            sums, normalizers, per_example = step(x, y)
            sums = {k: float(v) for k, v in sums.items()}
            totals = sums if totals is None else _add(totals, sums)
            batch_losses.append(task.loss(sums, {k: float(v) for k, v in normalizers.items()}))
            gathered.append({k: v.numpy() for k, v in per_example.items()})
            steps += 1
        if not steps:
            raise ValueError(f"no full eval batch of {s.eval_batch_size} in {eval_data}")
        gathered = {k: np.concatenate([g[k] for g in gathered]) for k in gathered[0]}
        stop_unless_outputs_finite(gathered, "evaluation", self.global_step, batch_losses, gathered.pop(FINITE))
        results = task.eval_results(totals, gathered, batch_losses)
        results["global_step"] = self.global_step
        return results

    def predict(self, predict_data):
        """Computes the task's `predict_outputs` for every example of `predict_data`.

        Args:
            predict_data: The examples to predict, as the task's `dataset` reads it.

        Returns:
            A dict: name -> numpy array with one row per example, in input order (the rows that
            pad the last global batch are dropped).

        Raises:
            ValueError: `predict_data` gives no batch.
            Diverged: The task's or the model's outputs hold a NaN or an Inf, so that no output
                file is written from them.
        """
        batches = self._distribute(predict_data, "predict", self.settings.predict_batch_size)

        def replica(batch):
            outputs = self._forward(batch[0], training=False)
            # The model's own outputs checked too: a task's may be whole numbers (NER's tag ids).
            return {**self.task.predict_outputs(outputs), FINITE: finite_rows(outputs)}

        outputs = per_example_outputs(self.strategy, batches, replica, self.task.num_examples(predict_data))
        if outputs is None:
            raise ValueError(f"nothing to predict in {predict_data}")
        stop_unless_outputs_finite(outputs, "prediction", self.global_step, finite=outputs.pop(FINITE))
        return outputs

    def write_eval_results(self, results, summary_dir=None):
        """Writes `eval_results.txt` in `output_dir` and TensorBoard scalars of `results`.

        The text file holds one `key = value` line per entry, sorted by key, as the original's
        (ints as they are, other values as float32). The scalars, at the model's global step,
        leave out `global_step`. Only the chief writes; on other workers this does nothing.

        Args:
            results: The dict `evaluate` returns (name -> number, with `global_step`).
            summary_dir: The folder of the TensorBoard scalars; None: `eval` in `output_dir`.
        """
        if not self.is_chief:
            return
        s = self.settings
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

