"""A run's hyper-parameters, as the scripts' flags name them, and the checks they must pass
before any work."""

import dataclasses
import os

# Defined below this module's floor (the run record, the batches' cut), kept importable from here.
from bert_tf.data.lengths import check_length_bucket
from bert_tf.errors import shown
from bert_tf.runs.record import lora_settings

# TensorFlow's variable for serving processes (bert_tf.export.common.model_runner), read once per
# process: oneDNN then takes every product's weights as constant, lays them out on the product's
# first call and goes on using that copy. A training step would then multiply by weights that no
# longer are the model's (a toy Keras fit with it set: loss 0.66 after 5 epochs against 0.41).
FROZEN_WEIGHTS_ENV = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"


def check_batch_sizes(settings, replicas):
    """Checks that each batch size divides over the replicas.

    Args:
        settings: Anything with the TrainingSettings' batch-size attributes (those it lacks are
            not checked).
        replicas: The strategy's replicas in sync.

    Raises:
        ValueError: Naming the first setting that does not divide: the training batch over the
            replicas times the accumulation steps, the eval and predict batches over the replicas.
    """
    k = getattr(settings, "gradient_accumulation_steps", 1)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:  # before it divides anything
        raise ValueError(f"{shown.gradient_accumulation_steps} must be a positive integer, got {k!r}")
    checks = [("train_batch_size", replicas * k, f"{replicas} replica(s) x {k} accumulation step(s)")]
    checks += [(name, replicas, f"{replicas} replica(s)") for name in ("eval_batch_size", "predict_batch_size")]
    for name, divisor, what in checks:
        value = getattr(settings, name, None)
        if value is not None and value >= 1 and value % divisor:
            raise ValueError(f"{shown(name)}={value} is not divisible by {what}")


def check_schedule(learning_rate, num_train_epochs=None):
    """A training run's learning rate and epochs, before any work: a rate must be finite and
    positive (0 would train nothing, and an infinite one fails only after its first step), and
    the epochs (where the run counts them) a finite number, 0 or more (a negative count would
    surface as a negative warmup).
    A search refuses the same values (`bert_tf.training.search.grid`). A ValueError starting with
    the setting otherwise."""
    if not -float("inf") < learning_rate < float("inf"):  # NaN too
        raise ValueError(f"{shown.learning_rate} must be a finite number, got {learning_rate!r}")
    if learning_rate < 0:
        raise ValueError(f"{shown.learning_rate} must not be negative, got {learning_rate!r}")
    if learning_rate == 0:
        raise ValueError(f"{shown.learning_rate}=0 changes no weight: give a positive rate (to evaluate or "
                         f"predict with the "
                         f"model as it is, {shown.do_train}=false)")
    if num_train_epochs is not None:
        check_epochs(num_train_epochs)


def check_epochs(num_train_epochs):
    """A ValueError naming the setting unless the number of epochs is finite and 0 or more."""
    if not 0 <= num_train_epochs < float("inf"):  # NaN too
        raise ValueError(f"{shown.num_train_epochs}={num_train_epochs:g} must be a finite number, 0 or more")


def check_weights_may_change(environ=None):
    """A ValueError naming FROZEN_WEIGHTS_ENV unless it is unset or off in `environ` (default: this
    process's environment). TensorFlow reads it as a bool, "1" or "true" on and "0" or "false"
    off, in any case, and aborts at its first product on any other value (an empty one too):
    training must run neither where oneDNN keeps its first call's weights nor where it aborts."""
    value = (os.environ if environ is None else environ).get(FROZEN_WEIGHTS_ENV)
    if value is None or value.lower() in ("0", "false"):
        return
    if value.lower() in ("1", "true"):
        raise ValueError(
            f"{FROZEN_WEIGHTS_ENV}={value} is set in this environment: TensorFlow's oneDNN products then keep "
            "the weights of their first call, so training would not see its own updates. Unset it to train "
            "(it is for processes that only serve exports)"
        )
    raise ValueError(
        f"{FROZEN_WEIGHTS_ENV}={value!r} is set in this environment, but TensorFlow reads it as 1, true, 0 or "
        "false (in any case) and aborts at its first product on anything else. Unset it to train"
    )


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """A run's hyper-parameters for the training loop (the scripts' flags, original names).

    Args:
        output_dir: The run's folder: checkpoints, logs and results.
        train_batch_size: The global training batch, as in the original.
        eval_batch_size: The global evaluation batch.
        predict_batch_size: The global prediction batch.
        learning_rate: The peak learning rate.
        num_train_steps: The steps of the schedule.
        num_warmup_steps: Its linear warmup's steps.
        save_checkpoints_steps: Steps between checkpoints.
        max_eval_steps: Evaluation batches at most; None: the whole eval set.
        optimizer: "adamw" (the original's AdamWeightDecay) or "lamb".
        gradient_accumulation_steps: Batches whose gradients make one update.
        steps_per_execution: Steps run per call into the compiled graph.
        keep_checkpoints: How many recent checkpoints are kept.
        jit_compile: Whether the step is compiled with XLA.
        seed: The run's random seed; None: unseeded.
        lora_rank: The rank of LoRA's adapters (`lora_settings`); 0: every weight trains.
        lora_alpha: Their alpha: the scale is lora_alpha / lora_rank (None: the rank's).
        skip_padding: Whether the encoder's layers skip a batch's padding rows
            (`default_skip_padding`).

    Raises:
        ValueError: A batch size, step count or LoRA setting that cannot be used, named.
    """

    output_dir: str
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    max_eval_steps: int | None = None
    optimizer: str = "adamw"
    gradient_accumulation_steps: int = 1
    steps_per_execution: int = 1
    keep_checkpoints: int = 5
    jit_compile: bool = False
    seed: int | None = None
    lora_rank: int = 0
    lora_alpha: float | None = None
    skip_padding: bool = False

    def __post_init__(self):
        positive = (
            "train_batch_size", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
            "gradient_accumulation_steps", "steps_per_execution", "keep_checkpoints",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{shown(name)} must be a positive integer, got {value!r}")
        for name in ("num_train_steps", "num_warmup_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{shown(name)} must not be negative, got {getattr(self, name)!r}")
        if self.learning_rate != self.learning_rate or self.learning_rate == float("inf"):
            raise ValueError(f"{shown.learning_rate} must be a finite number, got {self.learning_rate!r}")
        if self.learning_rate < 0:
            raise ValueError(f"{shown.learning_rate} must not be negative, got {self.learning_rate!r}")
        if self.max_eval_steps is not None and self.max_eval_steps < 1:
            raise ValueError(f"max_eval_steps must be positive, got {self.max_eval_steps!r}")
        object.__setattr__(self, "lora_alpha", lora_settings(self.lora_rank, self.lora_alpha)["lora_alpha"])
        if self.skip_padding and self.jit_compile:
            raise ValueError(f"{shown.skip_padding} needs {shown.jit_compile} off: {SKIP_PADDING_WITHOUT_XLA}")


# Batches are cut to their longest row rounded up to a multiple of a bucket
# (`bert_tf.data.lengths`). Which bucket pays depends on XLA:
# - XLA compiles one program per shape: a bucket of 8 keeps that to 128 / 8 = 16 programs at the
#   default max_seq_length, at most 7 positions of padding per row beyond the batch's longest.
# - Without XLA the training, evaluation and prediction steps are each traced once for all
#   lengths (their specs leave the length unknown), so more shapes cost nothing: the batch's
#   exact longest (a bucket of 1, as PyTorch's dynamic padding) is fastest.
# Measured by bench/finetuning.py (L=4 H=256 A=4 I=1024, vocab 30,522, batch 32, XLA off, a 2-core
# AMD EPYC with AVX-512, quiet machine): sentence pairs (27.8 pieces on average, longest 34) at
# 341.6 examples/s with a bucket of 1 against 291.4 with 8 (fixed padding 108.2); earlier, under
# load, single sentences / pairs at bucket 8: 235 / 168; 16: 175 / 128; 32: 202 / 84.
XLA_LENGTH_BUCKET = 8
GRAPH_LENGTH_BUCKET = 1


def default_length_bucket(jit_compile):
    """The bucket of a run or export that gives none: XLA_LENGTH_BUCKET where its model is
    XLA-compiled (one program per shape), else GRAPH_LENGTH_BUCKET (the exact longest)."""
    return XLA_LENGTH_BUCKET if jit_compile else GRAPH_LENGTH_BUCKET


# Why skipping the padding and XLA exclude each other (every setting that refuses the pair says so).
SKIP_PADDING_WITHOUT_XLA = "XLA compiles fixed shapes, and the number of real tokens is known only when a batch runs"


def default_skip_padding(length_bucket, jit_compile, platform):
    """Whether the loop skips its batches' padding rows unless told (`bert_tf.models.padding_skipped`:
    every layer runs all but attention's scores on the real tokens alone; the outputs on them are the
    same). On where it was measured to pay: on CPU, without XLA, with batches cut to their length
    (bench/skip_padding.py, BERT-Base, a batch of 32 with 72% / 80% real tokens, 2 Xeon cores: a
    training step in 0.77x / 0.86x the time; bench/finetuning.py's 4-layer, hidden-256 model: as
    fast as without, 0.99x / 1.00x). Off with fixed shapes (the original's graph; TPUs), with XLA (which takes
    no shape that depends on the data) and on GPUs: not measured there, where the count of real
    tokens makes the host wait for the device at every layer."""
    return length_bucket is not None and not jit_compile and platform == "cpu"


def padding_settings(length_bucket=None, pad_to_max_seq_length=False, group_by_length=False, jit_compile=False):
    """`{"length_bucket", "group_by_length"}` checked: length_bucket None when every batch keeps
    max_seq_length (`pad_to_max_seq_length`, the original's static shapes, which TPUs need), else
    the positive bucket of the batches' cut (`bert_tf.data.lengths.cut_padding`; None given:
    `default_length_bucket(jit_compile)`); group_by_length: training batches of examples of
    similar length (`bert_tf.data.batching.array_dataset`). A ValueError starting with the setting
    at fault otherwise."""
    if length_bucket is None:
        length_bucket = default_length_bucket(jit_compile)
    check_length_bucket(length_bucket)
    return {"length_bucket": None if pad_to_max_seq_length else length_bucket, "group_by_length": bool(group_by_length)}
