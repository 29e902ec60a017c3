"""Writes a checkpoint exactly as the original TF1 code would: tf.compat.v1 variables with the
original names, saved by a tf.compat.v1 Saver. The names and shapes are spelled out here from
the original layout, independently of bert_tf's own name map."""

import numpy as np
import tensorflow as tf


def original_shapes(config, with_heads=True):
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    shapes = {
        "bert/embeddings/word_embeddings": (v, h),
        "bert/embeddings/token_type_embeddings": (config.type_vocab_size, h),
        "bert/embeddings/position_embeddings": (config.max_position_embeddings, h),
        "bert/embeddings/LayerNorm/gamma": (h,),
        "bert/embeddings/LayerNorm/beta": (h,),
        "bert/pooler/dense/kernel": (h, h),
        "bert/pooler/dense/bias": (h,),
    }
    for n in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{n}/"
        for name in ("query", "key", "value"):
            shapes[p + f"attention/self/{name}/kernel"] = (h, h)
            shapes[p + f"attention/self/{name}/bias"] = (h,)
        shapes[p + "attention/output/dense/kernel"] = (h, h)
        shapes[p + "attention/output/dense/bias"] = (h,)
        shapes[p + "intermediate/dense/kernel"] = (h, i)
        shapes[p + "intermediate/dense/bias"] = (i,)
        shapes[p + "output/dense/kernel"] = (i, h)
        shapes[p + "output/dense/bias"] = (h,)
        for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[p + ln + "/gamma"] = (h,)
            shapes[p + ln + "/beta"] = (h,)
    if with_heads:
        shapes.update(
            {
                "cls/predictions/transform/dense/kernel": (h, h),
                "cls/predictions/transform/dense/bias": (h,),
                "cls/predictions/transform/LayerNorm/gamma": (h,),
                "cls/predictions/transform/LayerNorm/beta": (h,),
                "cls/predictions/output_bias": (v,),
                "cls/seq_relationship/output_weights": (2, h),
                "cls/seq_relationship/output_bias": (2,),
            }
        )
    return shapes


def random_weights(shapes, seed=0):
    """Values far from any initializer, so a mis-mapped or transposed variable shows."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes.items():
        if name.endswith("gamma"):
            out[name] = 1.0 + 0.2 * rng.standard_normal(shape)
        else:
            out[name] = 0.3 * rng.standard_normal(shape)
    return {k: v.astype(np.float32) for k, v in out.items()}


def write_tf1_checkpoint(prefix, weights, adam_slots=True, global_step=1000, extra=None):
    """Saves `weights` (name -> array) plus, like a training run, Adam slots and global_step."""
    values = dict(weights)
    if adam_slots:
        for name, value in weights.items():
            values[name + "/adam_m"] = np.zeros_like(value)
            values[name + "/adam_v"] = np.ones_like(value)
    values.update(extra or {})
    with tf.Graph().as_default():
        variables = [tf.compat.v1.get_variable(n, initializer=tf.constant(v)) for n, v in values.items()]
        if global_step is not None:
            variables.append(
                tf.compat.v1.get_variable(
                    "global_step", initializer=tf.constant(global_step, tf.int64), trainable=False
                )
            )
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, str(prefix), write_meta_graph=False)
    return str(prefix)


def read_tf1_checkpoint(prefix, shapes):
    """Restores the named variables with a tf.compat.v1 Saver, as the original code would."""
    with tf.Graph().as_default():
        variables = {
            n: tf.compat.v1.get_variable(n, shape=s, dtype=tf.float32) for n, s in shapes.items()
        }
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as sess:
            saver.restore(sess, str(prefix))
            return sess.run(variables)
