"""What `Trainer.restore` did with a run's model (its own module so that the loop stays short)."""

import dataclasses

# How a run's model got its weights (`RestoreStatus.start`).
RESUMED, INITIALISED, RANDOM = "resumed", "initialised", "random"


@dataclasses.dataclass(frozen=True)
class RestoreStatus:
    """What `Trainer.restore` did with a run's model.

    It resumed the output folder's latest checkpoint, initialised the model from an
    init_checkpoint, or left it at random. `str()` gives one line for the run's log.

    Args:
        start: `RESUMED`, `INITIALISED` or `RANDOM`.
        path: The checkpoint read; None when none was (`RANDOM`).
        step: The global step after reading it.
        unused: For `INITIALISED`: how many checkpoint variables the model has no place for.
        not_found: For `INITIALISED`: the model variables the checkpoint lacks (e.g. a new task
            head), initialised afresh.
    """

    start: str
    path: str | None = None
    step: int = 0
    unused: int = 0
    not_found: tuple = ()

    def __str__(self):
        if self.start == RESUMED:
            return f"resumed from {self.path} at global step {self.step}"
        if self.start == RANDOM:
            return "initialised at random"
        notes = [f"{self.unused} unused variables"] if self.unused else []
        if self.not_found:
            notes.append(f"not in the checkpoint, initialised afresh: {', '.join(self.not_found)}")
        return f"initialised from {self.path}" + (f" ({'; '.join(notes)})" if notes else "")
