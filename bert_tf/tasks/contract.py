"""What a fine-tuning task supplies to the one driver: read this first to add a task.

To add a task (say `paraphrase`):

1. A folder `bert_tf/tasks/paraphrase/` holding its readers, its `Task` of the one training loop
   (`bert_tf.training.task.Task`: inputs, model, loss, metrics), its model class (encoder + head,
   registered for Keras serialization), its output writers, its export, and one `FineTuning`
   subclass below (by convention in `fine_tuning.py`).
2. One registry entry: a `bert_tf.runs.registry.TaskKind` in its `KINDS`, or
   `registry.register(TaskKind(...))` run when your package is imported. It names the kind, its
   script, its model class and the attribute holding the head (`head_layer`), the head's
   original-checkpoint names, the run-record fields it keeps (`record_fields`; a field
   `RunRecord` lacks is kept in its `options`), the model's constructor arguments from a record
   (`model_args`), and the import paths of its Task, exporter and FineTuning as "module:Name".
3. A script `run_scripts/run_paraphrase.py`: the flags every fine-tuning script has
   (`common_flags.define_fine_tuning_flags`, `define_padding_flags`), the task's own, and a
   `main` that calls `fine_tuning.main(FLAGS, "paraphrase")`; a package outside bert_tf that
   registers its kind is imported first. Then `python docs/generate_flags.py` (its flag page).

Nothing in `bert_tf/training/`, `bert_tf/export/` or `bert_tf/checkpoints/` changes: they dispatch on
the registry. The driver (`run_scripts/fine_tuning.py`) takes every run through the same steps
and calls the methods below in this order; each reads the script's flags from `self.flags`:

    check_given()                       the inputs the actions need are named
    [the driver: something to do, the casing, the config, max_seq_length, LoRA, warmup and
     --output_dir checked -> BertConfig]
    check(config)                       the task's own flags
    [the driver: the padding settings]
    read_inputs(config)                 every input read and checked, before anything is written
    record(group_by_length)             the run record (fine_tuning_task.json)
    fields_to_match(do_train)           which of its fields an earlier run in --output_dir must share
    check_run(record)                   checks against that earlier run
    [the driver: the earlier run checked; the strategy; the batch sizes against its replicas]
    build_task(config, record, length_bucket)
    encode(task)                        the inputs as the task's features (a task whose features
                                        are cached in --output_dir builds them here, once the
                                        folder is checked); returns the training examples the
                                        steps count (the driver keeps it as num_train_examples)
    [the driver: the training settings; the Trainer]
    describe(), training_examples()     the log lines' words ("Task swag (4 choices)", "120 examples")
    train_data()                        what the Trainer trains on (--do_train)
    [the driver: train, resuming the latest checkpoint, or restore the trained model]
    evaluate(trainer)                   --do_eval, where `actions` has it: the dev figures, written
                                        to eval_results.txt; the driver logs them
    predict(trainer)                    --do_predict: the test outputs written (the chief writes)

The class attributes say the rest: `actions` (the script's action flags), `evaluation` (the action
whose figures choose a search's best run), `progress_fields`, `loss_reads_padding` (padding is then
never skipped), `search_flags` and `search_paths` (the task's flags every run of a search shares;
`shared_settings` normalizes them). `kind` is set by the driver from the registry.

A method raises `UsageError` with the message the user reads (flags written as `--name`), or a
library error (ValueError, FileNotFoundError) whose message already names the file or setting;
the script prints either as its one-line error. `named` turns a library call's error into a
UsageError that names the flag.
"""

import re

from absl import logging

__all__ = ["FineTuning", "UsageError", "as_flags", "named"]


class UsageError(Exception):
    """A message for the user as it stands: the script prints it as its one error line."""


def as_flags(message, names):
    """A library message with the settings `names` written as the script's flags: `output_dir=X`
    and a bare `output_dir` become `--output_dir=X`, `--output_dir` (not inside a path or word)."""
    pattern = r"(?<![\w\-/.])(" + "|".join(map(re.escape, names)) + r")(?=[=\s:,;)]|$)"
    return re.sub(pattern, r"--\1", message)


def named(work, prefix="", flag_names=()):
    """`work()`, a library error in it (ValueError, FileNotFoundError, FloatingPointError) raised
    again as a UsageError: `prefix` before its message (the flag or file it is about, when the
    message does not say; not for a FloatingPointError, which is about the model's figures), the
    settings `flag_names` written as flags (`as_flags`)."""
    try:
        return work()
    except FloatingPointError as e:  # the model's figures, not a file or setting: no prefix
        raise UsageError(str(e)) from None
    except (ValueError, FileNotFoundError) as e:
        message = f"{prefix}{e}"
        raise UsageError(as_flags(message, flag_names) if flag_names else message) from None


class FineTuning:
    """One run of a fine-tuning task, as the driver takes it through its steps (module docstring).
    `flags`: the script's flag values (attributes: `flags.data_dir`, ...)."""

    # The actions the script has (flags); the first line of the "nothing to do" error names them.
    actions = ("do_train", "do_eval", "do_predict")
    # The action whose run writes the dev figures: a search chooses its best run by them.
    evaluation = "do_eval"
    # The progress bar's label -> the training log's key.
    progress_fields = {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"}
    # Whether the task's loss reads the padding positions' outputs (skipping padding would change it).
    loss_reads_padding = False
    # The task's flags whose values every run of a search shares (beyond the driver's: the model,
    # casing, lengths, optimizer, LoRA), and those of them that are paths (compared made absolute).
    search_flags = ()
    search_paths = ()
    kind = ""  # its registry kind
    num_train_examples = 0  # what `encode` returned (the driver sets it)

    def __init__(self, flags):
        self.flags = flags

    def check_given(self):
        """The inputs the actions need are named (a missing one is reported before the model's checks)."""

    def check(self, config):
        """The task's own flags against each other and the BertConfig `config`."""

    def read_inputs(self, config):
        """Reads and checks every input the actions need, before anything is written."""
        raise NotImplementedError

    def record(self, group_by_length):
        """The run's `bert_tf.runs.record.RunRecord`."""
        raise NotImplementedError

    def fields_to_match(self, do_train):
        """The record fields an earlier run in --output_dir must share with this one: all that
        decide the model and its batches when training (it resumes that run), those that decide
        the model's shape when only evaluating or predicting."""
        raise NotImplementedError

    def check_run(self, record):
        """Checks of `record` against the run already in --output_dir, beyond `fields_to_match`."""

    def build_task(self, config, record, length_bucket):
        """The task (`bert_tf.training.task.Task`) of `record`, its batches cut to a multiple of
        `length_bucket` (None: max_seq_length)."""
        raise NotImplementedError

    def encode(self, task):
        """The inputs as `task`'s features; returns how many training examples the steps count."""
        raise NotImplementedError

    def describe(self):
        """The run's log line's first part, e.g. `Task swag (4 choices)`."""
        return f"Task {self.kind}"

    def training_examples(self):
        """The training log line's count, e.g. `120 examples`."""
        return f"{self.num_train_examples} examples"

    def train_data(self):
        """What the Trainer trains on."""
        raise NotImplementedError

    def evaluate(self, trainer):
        """Evaluates the dev set(s), writes eval_results.txt; returns the results."""
        raise NotImplementedError

    def predict(self, trainer):
        """Predicts the test set(s) and writes the task's output files (the chief does)."""
        raise NotImplementedError

    @staticmethod
    def shared_settings(values):
        """The search's shared `{flag: value}` as the runs take them (e.g. a name as the task keys it)."""
        return values

    @staticmethod
    def announce(action, count, unit="examples", name=""):
        """Logs a set's start: `***** Running evaluation (mismatched): 12 examples *****`."""
        logging.info("***** Running %s%s: %d %s *****", action, f" ({name})" if name else "", count, unit)
