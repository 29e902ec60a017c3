"""A progress display for the training loop's `on_log`."""

from absl import logging


class Progress:
    """`on_log` for the training loop: a progress bar showing `fields` (label -> log key), or,
    when not `enabled`, a log line every `every` steps."""

    def __init__(self, enabled, total, every, fields):
        self.every, self.fields, self.bar = every, fields, None
        if enabled:
            import tqdm  # only for the bar

            self.bar = tqdm.tqdm(total=total, unit=" steps", dynamic_ncols=True)

    def __call__(self, step, logs):
        if self.bar is not None:
            self.bar.n = step
            self.bar.set_postfix(
                {
                    label: f"{logs[key]:.0f}" if key.endswith("_per_second") else f"{logs[key]:.3f}"
                    for label, key in self.fields.items()
                    if key in logs  # e.g. no accuracy for regression
                }
            )
        elif step % self.every == 0:
            logging.info("step %d: %s", step, {k: round(v, 4) for k, v in logs.items()})

    def close(self):
        if self.bar is not None:
            self.bar.close()
