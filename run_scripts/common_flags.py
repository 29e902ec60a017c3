"""Flags that several scripts share, defined once (names and defaults of the original release)."""

import os
import sys

from absl import flags


def fail(message):
    """Stops the script with exit code 1 and one clear line (no flag help dump)."""
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def load_bert_config(path, flag="bert_config_file"):
    """The BertConfig at `path`, or a one-line error naming the flag."""
    from bert_tf.config import BertConfig

    try:
        return BertConfig.from_json_file(path)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--{flag}: {e}")


def define_tpu_flags():
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
    flags.DEFINE_string(
        "tpu_name", None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url."
    )
    flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
    flags.DEFINE_string("gcp_project", None, "[Optional] Project name of the Cloud TPU.")
    flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL (the TPU's address).")
    flags.DEFINE_integer(
        "num_tpu_cores", 8, "Only used if `use_tpu` is True. Total number of TPU cores to use."
    )


def tpu_strategy(flag_values):
    """A TPUStrategy for --use_tpu, or a clear error naming the flags when no TPU is reachable."""
    import tensorflow as tf

    address = flag_values.tpu_name or flag_values.master
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=address, zone=flag_values.tpu_zone, project=flag_values.gcp_project
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as e:
        fail(
            f"--use_tpu is set but no TPU is reachable (tpu_name={flag_values.tpu_name!r}, "
            f"master={flag_values.master!r}, tpu_zone={flag_values.tpu_zone!r}): {e}"
        )
    return tf.distribute.TPUStrategy(resolver)
