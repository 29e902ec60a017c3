"""What a fine-tuning task supplies to the one driver: read this first to add a task.

To add a task (say `paraphrase`; docs/new_task.md carries a complete one):

1. A folder `bert_tf/tasks/paraphrase/` holding its settings (`settings.py`: a
   `bert_tf.fields.settings_class` adding the task's groups and fields to
   `bert_tf.tasks.settings.FineTuningSettings`, its `kind` the registry's name), its readers, its
   `Task` of the one training loop (`bert_tf.training.task.Task`: inputs, model, loss, metrics),
   its model class (encoder + head, registered for Keras serialization), its output writers, its
   export, and one `FineTuning` subclass below (by convention in `fine_tuning.py`).
2. One registry entry, a `bert_tf.runs.kinds.TaskKind`: in the folder's `kind.py` (as `KIND`, the
   folder's name added to `bert_tf.tasks.BUILT_IN`) for a task of this package, or
   `registry.register(TaskKind(...))` run when your package is imported. It names the kind, its
   script, its model class and the attribute holding the head (`head_layer`), the head's
   original-checkpoint names, the run-record fields it keeps and their defaults (`record_fields`;
   `FROM_SETTINGS` makes one the task's setting of that name), the model's constructor
   arguments from a record (`model_args`), and the import paths of its Task, exporter, FineTuning and settings as
   "module:Name".
3. A script `run_scripts/run_paraphrase.py`: `settings_flags.define_flags(Settings)` and a `main`
   that calls `fine_tuning.main(settings_flags.settings_from_flags(Settings))`; a package outside
   bert_tf that registers its kind is imported first. Then `python docs/generate_flags.py` (its
   flag page). From Python, `bert_tf.fine_tune(Settings(...))` runs the same.

Nothing in `bert_tf/training/`, `bert_tf/export/` or `bert_tf/checkpoints/` changes: they dispatch on
the registry. The driver (`bert_tf.tasks.driver.fine_tune`) takes every run through the same steps
and calls the methods below in this order; each reads the run's settings from `self.settings`. A
step that resolves a setting (a sentence-transformers folder's pooling) sets `self.settings` to
new settings (`dataclasses.replace`); settings are frozen and never changed in place:

    check_given()                       the inputs the actions need are named
    [the driver: something to do, the casing, the config, max_seq_length, LoRA, warmup and
     output_dir checked -> BertConfig]
    check(config)                       the task's own settings
    [the driver: the padding settings]
    read_inputs(config)                 every input read and checked, before anything is written
    record(group_by_length)             the run record (fine_tuning_task.json)
    fields_to_match(do_train)           which of its fields an earlier run in output_dir must share
    teacher_fields()                    with --teacher: the record fields its run must share
                                        (`bert_tf.tasks.distillation`)
    check_run(record)                   checks against that earlier run
    [the driver: the earlier run checked; the strategy; the batch sizes against its replicas]
    build_task(config, record, length_bucket)
    encode(task)                        the inputs as the task's features (a task whose features
                                        are cached in output_dir builds them here, once the
                                        folder is checked); returns the training examples the
                                        steps count (the driver keeps it as num_train_examples)
    [the driver: the training settings; the Trainer]
    describe(), training_examples()     the log lines' words ("Task swag (4 choices)", "120 examples")
    train_data()                        what the Trainer trains on (do_train)
    [the driver: train, resuming the latest checkpoint, or restore the trained model]
    evaluate(trainer)                   do_eval, where `actions` has it: the dev figures, written
                                        to eval_results.txt; the driver logs them
    predict(trainer)                    do_predict: the test outputs written (the chief writes);
                                        a task that evaluates by predicting returns its figures

A run with a teacher (`bert_tf.tasks.distillation`) is the same run: the driver reads the teacher
with the sources, adds it to the record and wraps the task; a task whose `read_inputs` reads the
transfer inputs (`read_transfer`) sets `reads_transfer`, gives them a `LABELED` column of 0
(`bert_tf.data.batching`) and counts them in `num_transfer`.

The class attributes say the rest: `actions` (the action settings the task has), `evaluation`
(the action whose figures choose a search's best run), `progress_fields`, `loss_reads_padding`
(padding is then never skipped), and `shared_settings`, which normalizes the values every run of a
search shares (the settings class's fields marked `SEARCH`). `kind` is set by the driver from the
registry.

A method raises `SettingError` (`UsageError` is its old name) with the message the user reads
(settings written as `--name`, as the scripts print it), or a library error (ValueError,
FileNotFoundError) whose message already names the file or setting. `with reported(...)` turns a
library call's error into a SettingError; a message names a setting as `shown.name`
(`bert_tf.errors.shown`), which `reported(flag_names=...)` writes as the flag.
"""

from absl import logging

from bert_tf.errors import SettingError, as_flags, named, reported, shown  # noqa: F401 - the tasks raise and wrap with them

__all__ = ["FineTuning", "UsageError", "as_flags", "named"]


# A task's error for the user: the one error type of a bad setting (its old name).
UsageError = SettingError


class FineTuning:
    """One run of a fine-tuning task, as the driver takes it through its steps (module docstring).

    Args:
        settings: The run's settings (the task's settings class: `settings.data_dir`, ...).
    """

    # The action settings the task has; the "nothing to do" error names them.
    actions = ("do_train", "do_eval", "do_predict")
    # The action whose run writes the dev figures: a search chooses its best run by them.
    evaluation = "do_eval"
    # The progress bar's label -> the training log's key.
    progress_fields = {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"}
    # Whether the task's loss reads the padding positions' outputs (skipping padding would change it).
    loss_reads_padding = False
    kind = ""  # its registry kind
    num_train_examples = 0  # what `encode` returned (the driver sets it)
    # Whether `read_inputs` reads `transfer_file` (unlabelled inputs: weight 0, the teacher's targets alone).
    reads_transfer = False
    transfer = ()  # the transfer inputs as the task's reader gave them (`read_transfer`)
    num_transfer = 0  # the transfer inputs among the training examples (the task's `encode` sets it)
    teacher = None  # the run's `bert_tf.tasks.distillation.Teacher` (the driver sets it)

    def __init__(self, settings):
        self.settings = settings

    @property
    def flags(self):
        """Deprecated: the run's settings are `settings` (they were a script's flags)."""
        import warnings

        warnings.warn("FineTuning.flags is now FineTuning.settings", DeprecationWarning, stacklevel=2)
        return self.settings

    def check_given(self):
        """The inputs the actions need are named (a missing one is reported before the model's checks)."""

    def check(self, config):
        """Checks the task's own settings against each other and the model.

        Args:
            config: The run's BertConfig.

        Raises:
            SettingError: A setting the task cannot use.
        """

    def read_inputs(self, config):
        """Reads and checks every input the actions need, before anything is written.

        Args:
            config: The run's BertConfig.
        """
        raise NotImplementedError

    def record(self, group_by_length):
        """The run's record, written from its settings.

        Args:
            group_by_length: Whether the run's training batches group examples by length.

        Returns:
            The run's `bert_tf.runs.record.RunRecord`.
        """
        raise NotImplementedError

    def fields_to_match(self, do_train):
        """The record fields an earlier run in output_dir must share with this one.

        Args:
            do_train: Whether this run trains (it then resumes that run).

        Returns:
            The names: all that decide the model and its batches when training, those that decide
            the model's shape when only evaluating or predicting.
        """
        raise NotImplementedError

    def read_transfer(self, read):
        """Reads `transfer_file` into `transfer` when the run trains with one (`read_inputs` calls it).

        Args:
            read: `read(path)`, the task's reader of its test file's layout: the unlabelled inputs.
                Its errors, and a file that is not there, name `transfer_file`.
        """
        from bert_tf.tasks.distillation import transfer_path

        f = self.settings
        if f.transfer_file and f.do_train:
            with reported(flag_names=("transfer_file",)):
                self.transfer = read(transfer_path(f.transfer_file))

    def teacher_fields(self):
        """The record fields a teacher's run must share with this one (`bert_tf.tasks.distillation`):
        by default those an evaluation of another run needs (`fields_to_match(False)`) but the task's name.

        Returns:
            The names.
        """
        return tuple(name for name in self.fields_to_match(False) if name != "task_name")

    def check_teacher(self, config, teacher):
        """Checks the student's config against its teacher's beyond the record (`teacher_fields`).

        Args:
            config: The student's BertConfig.
            teacher: The run's `bert_tf.tasks.distillation.Teacher`.
        """

    def check_run(self, record):
        """Checks this run against the run already in output_dir, beyond `fields_to_match`.

        Args:
            record: This run's RunRecord.
        """

    def build_task(self, config, record, length_bucket):
        """The task of the one training loop for this run.

        Args:
            config: The run's BertConfig.
            record: The run's RunRecord.
            length_bucket: Batches are cut to a multiple of it; None: to max_seq_length.

        Returns:
            A `bert_tf.training.task.Task`.
        """
        raise NotImplementedError

    def encode(self, task):
        """Encodes the inputs as the task's features.

        Args:
            task: The run's Task (`build_task`).

        Returns:
            How many training examples the steps count.
        """
        raise NotImplementedError

    def describe(self):
        """Returns the run's log line's first part, e.g. `Task swag (4 choices)`."""
        return f"Task {self.kind}"

    def training_examples(self):
        """Returns the training log line's count, e.g. `120 examples`, or `620 examples (120
        labelled, 500 of --transfer_file)`."""
        n, transfer = self.num_train_examples, self.num_transfer
        return f"{n} examples" + (f" ({n - transfer} labelled, {transfer} of --transfer_file)" if transfer else "")

    def train_data(self):
        """What the Trainer trains on."""
        raise NotImplementedError

    def evaluate(self, trainer):
        """Evaluates the dev set(s) and writes eval_results.txt.

        Args:
            trainer: The run's `bert_tf.training.trainer.Trainer`, its model trained or restored.

        Returns:
            The dev figures, name -> value.
        """
        raise NotImplementedError

    def predict(self, trainer):
        """Predicts the test set(s) and writes the task's output files (the chief does).

        Args:
            trainer: The run's `bert_tf.training.trainer.Trainer`, its model trained or restored.

        Returns:
            None, or the figures of a task that evaluates by predicting.
        """
        raise NotImplementedError

    @staticmethod
    def shared_settings(values):
        """The settings every run of a search shares, as the runs take them.

        Args:
            values: `{setting: value}` of the fields marked SEARCH.

        Returns:
            The values normalized as the task reads them (e.g. a task name as the task keys it).
        """
        return values

    def log_windows(self, name, counts):
        """Logs how a set's texts fill their windows (`--max_windows`): texts, windows, and the
        texts cut at their last window.

        Args:
            name: The set ("train", "dev", ...).
            counts: `(windows, cut)` per text (int arrays `[texts]`), or None without windows.
        """
        if counts is None:
            return
        windows, cut = counts
        logging.info("%s: %d texts in %d windows (at most %d); %d cut at --max_windows=%d", name, len(windows),
                     int(windows.sum()), int(windows.max(initial=0)), int(cut.sum()), self.settings.max_windows)

    @staticmethod
    def announce(action, count, unit="examples", name=""):
        """Logs a set's start: `***** Running evaluation (mismatched): 12 examples *****`.

        Args:
            action: What starts ("evaluation", "prediction").
            count: How many of `unit`.
            unit: What is counted.
            name: The set's name, when the task has several.
        """
        logging.info("***** Running %s%s: %d %s *****", action, f" ({name})" if name else "", count, unit)
