"""Speed settings that follow the platform, not a constant (TensorFlow).

`jit_compile` (XLA) left unset ("auto") resolves here: on GPU and TPU XLA is on (it fuses the
bias, GELU, LayerNorm and dropout around the matmuls, and a TPU runs nothing else); on CPU the
choice is what `bench/finetuning.py` measured for the fine-tuning step, which prints the XLA on/off
ratios and the setting they support on the machine at hand. Measured on a 2-core AMD EPYC with
AVX-512 (L=4 H=256, batch 32, real-length text; two rounds on a loaded machine): with batches cut
to their longest row (bucket 32: one or two lengths) XLA was 0.60-0.64x, at
fixed padding 0.99-1.01x, so the CPU default is off. A machine where the bench finds otherwise
passes `--jit_compile` explicitly.
"""

import tensorflow as tf

PLATFORMS = ("cpu", "gpu", "tpu")
# XLA by platform when jit_compile is not given; "cpu" as measured (see the module's docstring).
JIT_COMPILE_BY_PLATFORM = {"cpu": False, "gpu": True, "tpu": True}


def current_platform(use_tpu=False):
    """"tpu" with use_tpu, else "gpu" when TensorFlow sees a GPU, else "cpu"."""
    if use_tpu:
        return "tpu"
    return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


def resolve_jit_compile(jit_compile, platform):
    """`jit_compile` as given (True / False), or None ("auto"): the platform's default in
    JIT_COMPILE_BY_PLATFORM. A ValueError naming the setting for anything else."""
    if platform not in PLATFORMS:
        raise ValueError(f"platform={platform!r} is not one of {', '.join(PLATFORMS)}")
    if jit_compile is None:
        return JIT_COMPILE_BY_PLATFORM[platform]
    if not isinstance(jit_compile, bool):
        raise ValueError(f"jit_compile={jit_compile!r} must be True, False or None (auto)")
    return jit_compile


def jit_compile_for(jit_compile, use_tpu=False):
    """`resolve_jit_compile` on the platform this process runs on (`current_platform`)."""
    return resolve_jit_compile(jit_compile, current_platform(use_tpu))
