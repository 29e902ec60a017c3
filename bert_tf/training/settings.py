"""A run's hyper-parameters, as the scripts' flags name them, and the checks they must pass
before any work."""

import dataclasses


def check_batch_sizes(settings, replicas):
    """Each batch size must divide over the replicas (the training batch over the replicas times
    the accumulation steps); a ValueError naming the setting otherwise. `settings`: anything with
    the TrainingSettings' batch-size attributes (those it lacks are not checked)."""
    k = getattr(settings, "gradient_accumulation_steps", 1)
    checks = [("train_batch_size", replicas * k, f"{replicas} replica(s) x {k} accumulation step(s)")]
    checks += [(name, replicas, f"{replicas} replica(s)") for name in ("eval_batch_size", "predict_batch_size")]
    for name, divisor, what in checks:
        value = getattr(settings, name, None)
        if value is not None and value >= 1 and value % divisor:
            raise ValueError(f"{name}={value} is not divisible by {what}")


@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """A run's hyper-parameters (the scripts' flags, original names)."""

    output_dir: str
    train_batch_size: int = 32  # global, as in the original
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    max_eval_steps: int | None = None  # None: the whole eval set
    optimizer: str = "adamw"
    gradient_accumulation_steps: int = 1
    steps_per_execution: int = 1
    keep_checkpoints: int = 5
    jit_compile: bool = False
    seed: int | None = None

    def __post_init__(self):
        positive = (
            "train_batch_size", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
            "gradient_accumulation_steps", "steps_per_execution", "keep_checkpoints",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("num_train_steps", "num_warmup_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)!r}")
        if not self.learning_rate >= 0:  # also NaN
            raise ValueError(f"learning_rate must not be negative, got {self.learning_rate!r}")
        if self.max_eval_steps is not None and self.max_eval_steps < 1:
            raise ValueError(f"max_eval_steps must be positive, got {self.max_eval_steps!r}")
