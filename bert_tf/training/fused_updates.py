"""The original's AdamW update as TensorFlow's fused Adam kernel, for the TensorFlow backend.

`AdamWeightDecay.update_step` written in keras.ops runs about fourteen element-wise ops per
variable, each a pass over the variable's numbers (and, inside a tf.function, an op dispatched on
its own); TensorFlow's `ResourceApplyAdam` does the moments and the step in one pass (the decay
adds a multiply and a subtraction where it applies). bench/optimizer_step.py times both on the
model of bench/pretraining.py (11.3M parameters, the 30,522 x 256 embedding among them), gradient
clipping included: on 2 AVX-512 cores 29.7 ms per step in keras.ops, 15.2 ms fused, where a
fine-tuning step on short sentences takes 75-120 ms in all. Other backends keep the keras.ops
update.

The original's update without bias correction is the kernel's with beta1_power = beta2_power = 0
(its step size is lr * sqrt(1 - beta2_power) / (1 - beta1_power) = lr):

    m += (g - m)(1 - b1);  v += (g^2 - v)(1 - b2);  w -= lr * m / (sqrt(v) + eps)

and the decoupled weight decay lr * weight_decay_rate * w, taken from the weights before the step
as the original's update term is, is subtracted first.
"""

import tensorflow as tf


def adam_weight_decay_step(optimizer, gradient, variable, learning_rate, m, v):
    """One `AdamWeightDecay` update of `variable` with `gradient` (module docstring); `m` and `v`
    its moments. Keras' TensorFlow variables and tf.Variables both give their resource `handle`
    (inside a distribution strategy's update, the local copy's)."""
    dtype = variable.dtype
    if isinstance(gradient, tf.IndexedSlices):  # an embedding's gradient: the kernel takes dense ones
        gradient = tf.convert_to_tensor(gradient)
    learning_rate = tf.cast(learning_rate, dtype)
    if optimizer.decays(variable):
        tf.raw_ops.AssignSubVariableOp(
            resource=variable.handle, value=variable * (learning_rate * optimizer.weight_decay_rate)
        )
    zero = tf.constant(0.0, dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle, m=m.handle, v=v.handle, beta1_power=zero, beta2_power=zero, lr=learning_rate,
        beta1=tf.constant(optimizer.beta_1, dtype), beta2=tf.constant(optimizer.beta_2, dtype),
        epsilon=tf.constant(optimizer.epsilon, dtype), grad=tf.cast(gradient, dtype),
    )
