"""tf.distribute strategies for the scripts (TensorFlow-specific)."""

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def split_cpu(num_devices):
    """Splits the host CPU into `num_devices` logical devices (to try distribution without
    accelerators). Must run before TensorFlow creates its devices."""
    if num_devices and num_devices > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * num_devices)
        except RuntimeError as e:
            raise RuntimeError(f"cannot split the CPU into {num_devices} devices after TensorFlow started: {e}") from None


def default_strategy_name(use_tpu, num_gpus):
    if use_tpu:
        return "tpu"
    return "mirrored" if num_gpus > 1 else "one_device"


def create_strategy(name, num_gpus=0, num_cpu_devices=0, tpu_address=None, tpu_zone=None, gcp_project=None):
    """The strategy called `name` (one of STRATEGIES).

    one_device: the first GPU if any, else the CPU. mirrored: `num_gpus` GPUs, or the
    `num_cpu_devices` logical CPUs when there are none. multi_worker_mirrored: every worker of
    the cluster in TF_CONFIG. tpu: the TPU at `tpu_address`.
    """
    if name not in STRATEGIES:
        raise ValueError(f"unknown distribution strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
    if name == "multi_worker_mirrored":  # first: collective ops need a runtime not yet started
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address, zone=tpu_zone, project=gcp_project)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        if num_gpus:
            if num_gpus > len(gpus):
                raise ValueError(f"--num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible")
            return tf.distribute.MirroredStrategy([g.name for g in gpus[:num_gpus]])
        cpus = tf.config.list_logical_devices("CPU")
        devices = [d.name for d in (gpus or cpus[: max(1, num_cpu_devices or 1)])]
        return tf.distribute.MirroredStrategy(devices)
