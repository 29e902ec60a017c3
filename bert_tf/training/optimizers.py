"""The original release's optimizer (optimization.py) for Keras 3, and LAMB for large batches.

Both run on every Keras backend (keras.ops only) and work with `model.fit`; on the TensorFlow
backend AdamWeightDecay's update runs as TensorFlow's fused Adam kernel (`fused_updates`).
"""

import re

import keras
from keras import ops

from bert_tf.errors import shown

# The original never decays LayerNorm parameters or biases (matched on the variable's path).
DEFAULT_EXCLUDE = ("LayerNorm", "layer_norm", "bias")


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The original release's learning-rate schedule: linear warmup, then linear decay to 0.

    At step `step` the rate is `init_lr * step / num_warmup_steps` while `step < num_warmup_steps`,
    else `init_lr * (1 - min(step, num_train_steps) / num_train_steps)`. The decay is counted from
    step 0, as the original's `polynomial_decay` with power 1: the warmup does not delay it, and
    right after the warmup the rate is `init_lr * (1 - num_warmup_steps / num_train_steps)`.
    Called with a step, the schedule returns a float32 scalar.

    Args:
        init_lr: The peak learning rate (float).
        num_train_steps: The step at which the rate reaches 0 and stays there (a positive int).
        num_warmup_steps: The number of warmup steps (an int, 0 or more); 0: no warmup.

    Raises:
        ValueError: `num_train_steps` is not positive, or `num_warmup_steps` is negative.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
        if num_warmup_steps < 0:
            raise ValueError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        self.init_lr = init_lr
        self.num_train_steps = num_train_steps
        self.num_warmup_steps = num_warmup_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        done = ops.minimum(step, float(self.num_train_steps)) / float(self.num_train_steps)
        decayed = self.init_lr * (1.0 - done)
        if not self.num_warmup_steps:
            return decayed
        warmup = self.init_lr * step / float(self.num_warmup_steps)
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
        }


class _DecoupledDecay(keras.optimizers.Optimizer):
    """Shared by both optimizers: arguments, first/second moments, the exclusion rule by path."""

    default_learning_rate = 1e-3
    default_name = "decoupled_decay"

    def __init__(
        self,
        learning_rate=None,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=DEFAULT_EXCLUDE,
        global_clipnorm=1.0,
        name=None,
        **kwargs,
    ):
        super().__init__(
            learning_rate=self.default_learning_rate if learning_rate is None else learning_rate,
            global_clipnorm=global_clipnorm,
            name=name or self.default_name,
            **kwargs,
        )
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = list(exclude_from_weight_decay or [])
        self._exclude = (
            re.compile("|".join(map(re.escape, self.exclude_from_weight_decay)))
            if self.exclude_from_weight_decay
            else None
        )

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m, self._v = self.add_optimizer_variables(var_list, ["m", "v"])
        # Decided here, on the Keras variables' paths: update_step may get backend variables.
        self._decay_by_key = {self._var_key(v): self._decays_path(v.path) for v in var_list}

    def _decays_path(self, path):
        return bool(self.weight_decay_rate) and not (self._exclude and self._exclude.search(path))

    def decays(self, variable):
        """Whether weight decay applies to `variable`.

        It does when `weight_decay_rate` is not 0 and the variable's path contains none of
        `exclude_from_weight_decay`. A backend variable without a path (as `update_step` may get)
        is looked up by the decision `build` made from its Keras variable's path.

        Args:
            variable: A variable the optimizer was built for.

        Returns:
            True where its update adds `weight_decay_rate * variable`.
        """
        path = getattr(variable, "path", None)
        if path is not None:
            return self._decays_path(path)
        return self._decay_by_key[self._var_key(variable)]

    def _moments(self, gradient, variable):
        m = self._m[self._get_variable_index(variable)]
        v = self._v[self._get_variable_index(variable)]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        return m, v

    def get_config(self):
        config = super().get_config()
        config.update(
            weight_decay_rate=self.weight_decay_rate,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            exclude_from_weight_decay=self.exclude_from_weight_decay,
        )
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(_DecoupledDecay):
    """The original release's `AdamWeightDecayOptimizer`: Adam without bias correction, with weight decay.

    The weight decay is decoupled: added to the update, not to the loss.

    Each step updates every variable `w` with its gradient `g` as

        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        w -= lr * (m / (sqrt(v) + eps) + weight_decay_rate * w)   [decay only where `decays`]

    with the gradients clipped to a global norm of `global_clipnorm` (1.0) first, as the
    original's train op does.

    Args:
        learning_rate: A float or a `keras.optimizers.schedules.LearningRateSchedule`
            (`WarmupLinearDecay` for the original's); None: 5e-5.
        weight_decay_rate: The decoupled weight decay's factor; 0 turns the decay off.
        beta_1: The first moment's decay rate.
        beta_2: The second moment's decay rate.
        epsilon: Added to the square root of the second moment in the update's denominator.
        exclude_from_weight_decay: Substrings of variable paths that get no weight decay; the
            default excludes LayerNorm parameters and biases, as the original does. None or
            empty: every variable decays.
        global_clipnorm: The global norm the gradients are clipped to before the update (1.0,
            as the original's train op); None: no clipping (the caller clips).
        name: The optimizer's name; None: `"adam_weight_decay"`.
        fused: On the TensorFlow backend, run the update as TensorFlow's fused Adam kernel
            (`bert_tf.training.fused_updates`: one pass over each variable for the moments and
            the step, plus two for the decay where it applies, instead of about fourteen;
            bench/optimizer_step.py times both). The kernel takes (1 - beta_2) in float32
            (0.00099998713 for 0.999, as tf.keras' own Adam did on that kernel), where the
            original multiplies by 1.0 - beta_2 taken in double precision (0.001): the second
            moment moves at a rate 1.3e-5 (relative) slower. False keeps the original's
            arithmetic exactly. Other backends always run the keras.ops update.
        **kwargs: Passed on to `keras.optimizers.Optimizer`.
    """

    default_learning_rate = 5e-5
    default_name = "adam_weight_decay"

    def __init__(self, *args, fused=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.fused = fused

    def get_config(self):
        return {**super().get_config(), "fused": self.fused}

    def update_step(self, gradient, variable, learning_rate):
        """Applies one update to `variable` (Keras calls it once per variable and step).

        Args:
            gradient: The variable's gradient, already clipped (same shape as `variable`).
            variable: The variable to update.
            learning_rate: The step's learning rate (a scalar).

        Returns:
            None; `variable` and its moments are updated in place.
        """
        if self.fused and keras.backend.backend() == "tensorflow":  # one kernel (bert_tf.training.fused_updates)
            from bert_tf.training import fused_updates

            index = self._get_variable_index(variable)
            return fused_updates.adam_weight_decay_step(
                self, gradient, variable, learning_rate, self._m[index], self._v[index]
            )
        gradient = ops.cast(gradient, variable.dtype)
        m, v = self._moments(gradient, variable)
        update = m / (ops.sqrt(v) + self.epsilon)
        if self.decays(variable):
            update = update + self.weight_decay_rate * variable
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * update)


@keras.saving.register_keras_serializable(package="bert_tf")
class LAMB(_DecoupledDecay):
    """LAMB (You et al., 2019, Algorithm 2), for large-batch pre-training.

    The update is Adam's with bias correction plus decoupled weight decay, scaled per variable by
    the trust ratio ||w|| / ||update|| (1 where either norm is 0, and for variables excluded from
    decay).

    Args:
        learning_rate: A float or a `keras.optimizers.schedules.LearningRateSchedule`
            (`WarmupLinearDecay` for the original's); None: 1e-3.
        weight_decay_rate: The decoupled weight decay's factor; 0 turns the decay off.
        beta_1: The first moment's decay rate.
        beta_2: The second moment's decay rate.
        epsilon: Added to the square root of the second moment in the update's denominator.
        exclude_from_weight_decay: Substrings of variable paths that get no weight decay; the
            default excludes LayerNorm parameters and biases, as the original does. None or
            empty: every variable decays.
        global_clipnorm: The global norm the gradients are clipped to before the update (1.0,
            as the original's train op); None: no clipping (the caller clips).
        name: The optimizer's name; None: `"lamb"`.
        **kwargs: Passed on to `keras.optimizers.Optimizer`.
    """

    default_learning_rate = 1e-3
    default_name = "lamb"

    def update_step(self, gradient, variable, learning_rate):
        """Applies one update to `variable` (Keras calls it once per variable and step).

        Args:
            gradient: The variable's gradient, already clipped (same shape as `variable`).
            variable: The variable to update.
            learning_rate: The step's learning rate (a scalar).
        """
        gradient = ops.cast(gradient, variable.dtype)
        m, v = self._moments(gradient, variable)
        t = ops.cast(self.iterations + 1, variable.dtype)
        m_hat = m / (1.0 - ops.power(ops.cast(self.beta_1, variable.dtype), t))
        v_hat = v / (1.0 - ops.power(ops.cast(self.beta_2, variable.dtype), t))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        ratio = 1.0
        if self.decays(variable):
            update = update + self.weight_decay_rate * variable
            w_norm, u_norm = ops.norm(ops.reshape(variable, [-1])), ops.norm(ops.reshape(update, [-1]))
            ratio = ops.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * ratio * update)


def create_optimizer(
    name, init_lr, num_train_steps, num_warmup_steps, weight_decay_rate=0.01, global_clipnorm=1.0, fused=True
):
    """Creates the `adamw` (the original's) or `lamb` optimizer on the original's schedule.

    The learning rate follows `WarmupLinearDecay` (linear warmup, then linear decay to 0).

    Args:
        name: `"adamw"` (`AdamWeightDecay`) or `"lamb"` (`LAMB`).
        init_lr: The peak learning rate.
        num_train_steps: The step at which the learning rate reaches 0.
        num_warmup_steps: The number of warmup steps.
        weight_decay_rate: The decoupled weight decay's factor.
        global_clipnorm: The global norm the gradients are clipped to; None leaves clipping to
            the caller (the distributed loop clips the summed gradient once, instead of each
            replica's).
        fused: AdamWeightDecay's `fused` (False: the original's arithmetic exactly on every
            backend); LAMB has no fused form, and ignores it.

    Returns:
        The optimizer, an `AdamWeightDecay` or a `LAMB`.

    Raises:
        ValueError: `name` is neither `"adamw"` nor `"lamb"`, or the schedule's step counts are
            invalid (see `WarmupLinearDecay`).
    """
    classes = {"adamw": AdamWeightDecay, "lamb": LAMB}
    if name not in classes:
        raise ValueError(f"unknown {shown.optimizer} {name!r}; expected 'adamw' or 'lamb'")
    schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    extra = {"fused": fused} if name == "adamw" else {}
    return classes[name](
        learning_rate=schedule, weight_decay_rate=weight_decay_rate, global_clipnorm=global_clipnorm, **extra
    )
