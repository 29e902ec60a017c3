"""tf.distribute strategies for the scripts (TensorFlow-specific)."""

import socket
import urllib.parse

import tensorflow as tf

# How long to wait for a TPU worker's gRPC port to accept a connection before giving up: past
# this, connecting to the cluster would hang instead of failing.
TPU_PROBE_TIMEOUT_S = 10.0

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def split_cpu(num_devices):
    """Splits the host CPU into `num_devices` logical devices (to try distribution without
    accelerators). Must run before TensorFlow creates its devices."""
    if num_devices and num_devices > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        if len(tf.config.get_logical_device_configuration(cpu) or ()) == num_devices:
            return  # already split so (a search's later runs, in the same process)
        try:
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * num_devices)
        except RuntimeError as e:
            raise RuntimeError(
                f"cannot split the CPU into {num_devices} devices after TensorFlow started: {e}"
            ) from None


def check_reachable(address, timeout=TPU_PROBE_TIMEOUT_S):
    """Raises ConnectionError unless the `grpc://host:port` at `address` accepts a TCP connection
    within `timeout` seconds (TensorFlow would wait for it indefinitely). Other addresses (a local
    TPU, an empty master) are left to TensorFlow."""
    parsed = urllib.parse.urlparse(address or "")
    if parsed.scheme != "grpc":
        return
    try:
        port = parsed.port
    except ValueError:
        port = None
    if not parsed.hostname or port is None:
        raise ConnectionError(f"{address!r} is not a grpc://host:port address")
    try:
        socket.create_connection((parsed.hostname, port), timeout=timeout).close()
    except OSError as e:
        raise ConnectionError(f"nothing accepts connections at {address} ({e})") from None


def default_strategy_name(use_tpu, num_gpus, num_cpu_devices=0):
    """tpu with a TPU; mirrored over several GPUs, or over the CPU split into several devices;
    else one_device."""
    if use_tpu:
        return "tpu"
    return "mirrored" if num_gpus > 1 or num_cpu_devices > 1 else "one_device"


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
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu_address, zone=tpu_zone, project=gcp_project
        )
        check_reachable(resolver.master())
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    gpus = tf.config.list_logical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        if num_gpus:
            if num_gpus > len(gpus):
                raise ValueError(f"num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible")
            return tf.distribute.MirroredStrategy([g.name for g in gpus[:num_gpus]])
        cpus = tf.config.list_logical_devices("CPU")
        devices = [d.name for d in (gpus or cpus[: max(1, num_cpu_devices or 1)])]
        return tf.distribute.MirroredStrategy(devices)
