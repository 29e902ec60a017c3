"""Sentence(-pair) classification tasks: examples, the original's `DataProcessor`, TSV reading and
registering a task under a name (`catalog` finds it by `--task_name`).

A processor turns a task's files into `InputExample`s, as `run_classifier.py` does. The built-in
tasks (`glue.py`: the original's cola, mnli, mrpc, xnli and the rest of GLUE; `multilabel.py`)
are loaded by `catalog`, which looks every task up by name. A new task needs no script
edit: describe its files and register it, and `--task_name=sentiment` finds it:

    from bert_tf.tasks.classifier.processors import TsvFile, TsvTask, register_task

    @register_task("sentiment")
    class SentimentTask(TsvTask):
        labels = ["neg", "pos"]
        # train.tsv: a header, then `label<TAB>text` rows; test.tsv: `id<TAB>text`.
        train_file = TsvFile("train.tsv", text_a=1, label=0)
        dev_file = train_file.at("dev.tsv")
        test_file = TsvFile("test.tsv", text_a=1, index=0)

A subclass written the original way (overriding `get_*_examples`, reading with `_read_tsv`) works
too; only the `TsvTask` readers check column counts and labels against `get_labels()`.

TSV files are read by `bert_tf.data.text_files` (UTF-8, the original's dialect); a bad file is
an error naming the file and its 1-based line. Blank lines are skipped.
"""

import dataclasses
import math
import os

from bert_tf.data.text_files import file_exists, format_names, read_table, tsv_rows
from bert_tf.errors import shown

# What a task module (`--task_module`) uses; TASKS is the registry's state, read through `catalog`.
__all__ = ["DataProcessor", "InputExample", "TsvFile", "TsvTask", "check_label", "find_data_file", "register_task"]


@dataclasses.dataclass
class InputExample:
    """One example of a classification task: the original's fields plus `index`.

    Args:
        guid: A unique id for logs, e.g. `"train-12"`.
        text_a: The first (or only) text.
        text_b: The second text of a pair; None for single-sentence tasks.
        label: A label name (a float as a string for regression), a list of names for
            multi-label tasks, or None for an unlabelled test row (the original's four tasks put
            a placeholder name there).
        index: The id a GLUE submission file wants for this row (the test file's index/id
            column, TFDS's `idx`); None: use the example's position.
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | list[str] | None = None
    index: str | None = None


class DataProcessor:
    """The original's interface for reading a task, so that an original subclass ports unchanged.

    A subclass defines `get_train_examples`, `get_dev_examples`, `get_test_examples` and
    `get_labels`; the class attributes below describe the task to the rest of the package.

    Attributes:
        label_kind: `"single"` (softmax), `"regression"` (one float output) or `"multi"`
            (sigmoids).
        submission_name: The GLUE submission file's stem (`"MRPC"` -> MRPC.tsv); None outside
            GLUE.
        tfds: A `tfds_sources.TfdsSource` to read the task through tensorflow-datasets, or None.
        task_name: The name the task is registered under, set by `register_task`; used in error
            messages.
    """

    label_kind = "single"
    submission_name = None
    tfds = None
    task_name = None

    def get_train_examples(self, data_dir):
        """Reads the train set.

        Args:
            data_dir: The task's data folder.

        Returns:
            A list of `InputExample`s.
        """
        raise NotImplementedError()

    def get_dev_examples(self, data_dir):
        """Reads the dev (evaluation) set.

        Args:
            data_dir: The task's data folder.

        Returns:
            A list of `InputExample`s.
        """
        raise NotImplementedError()

    def get_test_examples(self, data_dir):
        """Reads the examples to predict.

        Args:
            data_dir: The task's data folder.

        Returns:
            A list of `InputExample`s (their labels may be None or a placeholder).
        """
        raise NotImplementedError()

    def get_labels(self):
        """Names the task's labels.

        Returns:
            The label names, in the class order of the model's outputs; [] for a regression task.
        """
        raise NotImplementedError()

    def get_extra_dev_examples(self, data_dir):
        """Reads further evaluation sets (mnli: `{"mismatched": ...}`); the default has none.

        Args:
            data_dir: The task's data folder.

        Returns:
            A dict: set name -> list of `InputExample`s.
        """
        del data_dir
        return {}

    def get_extra_test_examples(self, data_dir):
        """Reads further prediction sets; the default has none.

        Args:
            data_dir: The task's data folder.

        Returns:
            A dict: set name -> `(submission file stem or None, list of InputExample)`.
        """
        del data_dir
        return {}

    @classmethod
    def _read_tsv(cls, input_file, quotechar=None):
        """All rows of a tab-separated file, blank lines included (as lists of cells)."""
        return [row for _, row in tsv_rows(input_file, quotechar)]


def _describe(processor):
    return getattr(processor, "task_name", None) or type(processor).__name__


def check_label(processor, label, path, line):
    """Checks that a label read from a task's file is one the task knows.

    Args:
        processor: The task's `DataProcessor`.
        label: The label as read (a string).
        path: The file it was read from (for the message).
        line: Its 1-based line in that file (for the message).

    Returns:
        `label`, unchanged.

    Raises:
        ValueError: For a regression task, `label` is not a finite number; for any other, it is
            not one of `processor.get_labels()`. The message names the file and line.
    """
    if processor.label_kind == "regression":
        try:
            ok = math.isfinite(float(label))
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"{path}:{line}: label {label!r} is not a finite number (task "
                f"{_describe(processor)} is a regression task)"
            )
        return label
    labels = processor.get_labels()
    if label not in labels:
        raise ValueError(
            f"{path}:{line}: label {label!r} is not one of task {_describe(processor)}'s labels "
            f"[{format_names(labels)}]"
        )
    return label


def find_data_file(processor, data_dir, relative_path, split):
    """Finds a split's file in the task's data folder.

    Args:
        processor: The task's `DataProcessor` (its name and `missing_file_hint`, if any, go into
            the message).
        data_dir: The task's data folder (local, or a remote path such as gs://...).
        relative_path: The file's path relative to `data_dir`.
        split: The split's name, e.g. `"train"` (for the message).

    Returns:
        The file's full path, `os.path.join(data_dir, relative_path)`.

    Raises:
        FileNotFoundError: The file does not exist; the message names the task, the split and
            the path.
    """
    path = os.path.join(data_dir, relative_path)
    if not file_exists(path):
        hint = getattr(processor, "missing_file_hint", "")
        raise FileNotFoundError(
            f"task {_describe(processor)}: no {split} file {relative_path!r} in {shown.data_dir} "
            f"{os.fspath(data_dir)!r} ({path} does not exist){hint}"
        )
    return path


# ---------------------------------------------------------------------------------------------
# Declarative TSV tasks.


@dataclasses.dataclass(frozen=True)
class TsvFile:
    """Where one split's examples sit in a TSV file.

    Columns are 0-based; a negative column counts from the end.

    Args:
        path: The file's path, relative to the task's data folder.
        text_a: The column of the first (or only) text.
        text_b: The column of the second text of a pair; None for single-sentence tasks.
        label: The label's column; None: unlabelled rows (a test file).
        index: The submission id's column (GLUE test files: 0); None: no such column.
        guid: The column giving the guid's id part; None: the row's 0-based line.
        header: Whether to skip the first row.
        set_name: The guid's prefix; None: the split (`"train"`, `"dev"`, `"test"`).
        dummy_label: The label of unlabelled rows (the original's test placeholders).
        where: None, or `(column, value)`: keep only the rows whose column equals the value.
    """

    path: str
    text_a: int
    text_b: int | None = None
    label: int | None = None
    index: int | None = None
    guid: int | None = None
    header: bool = True
    set_name: str | None = None
    dummy_label: str | None = None
    where: tuple[int, str] | None = None

    def at(self, path, **changes):
        """The same layout in another file, e.g. `train_file.at("dev.tsv")`.

        Args:
            path: The other file's path, relative to the task's data folder.
            **changes: Other fields to change, e.g. `label=None`.

        Returns:
            A new `TsvFile`.
        """
        return dataclasses.replace(self, path=path, **changes)

    def columns_read(self):
        """How many columns a row must have for this layout to be read.

        Returns:
            1 + the largest column it reads (a negative column -c counts as c).
        """
        used = [self.text_a, self.text_b, self.label, self.index, self.guid]
        used += [self.where[0]] if self.where else []
        return max(c + 1 if c >= 0 else -c for c in used if c is not None)


class TsvTask(DataProcessor):
    """A task whose splits are TSV files described by `TsvFile`s (class attributes or properties).

    Every row is checked: as many columns as the file's first row, a label from `labels` (a
    finite number for `label_kind = "regression"`), after `label_aliases` renames it.

    Attributes:
        labels: The label names, in the order of the model's outputs; empty for regression.
        label_aliases: Raw label -> label name (xnli's `"contradictory"` -> `"contradiction"`).
        train_file: The train split's `TsvFile`; None: the task has none.
        dev_file: The dev split's `TsvFile`; None: the task has none.
        test_file: The test split's `TsvFile`; None: the task has none.
        extra_dev_files: Further evaluation sets: name -> `TsvFile`.
        extra_test_files: Further prediction sets: name -> `(submission stem or None, TsvFile)`.
        missing_file_hint: Appended to the message for a missing file.
    """

    labels = ()
    label_aliases = {}
    train_file = None
    dev_file = None
    test_file = None
    extra_dev_files = {}
    extra_test_files = {}
    missing_file_hint = ""

    def get_labels(self):
        """Names the task's labels.

        Returns:
            `labels` as a list.
        """
        return list(self.labels)

    def get_train_examples(self, data_dir):
        """Reads the train set from `train_file`.

        Args:
            data_dir: The task's data folder.

        Returns:
            A list of `InputExample`s (see `read_examples`).

        Raises:
            ValueError: The task has no train file, or the file is bad (see `read_examples`).
            FileNotFoundError: The file is missing.
        """
        return self.read_examples(data_dir, self.train_file, "train")

    def get_dev_examples(self, data_dir):
        """Reads the dev set from `dev_file`.

        Args:
            data_dir: The task's data folder.

        Returns:
            A list of `InputExample`s (see `read_examples`).

        Raises:
            ValueError: The task has no dev file, or the file is bad (see `read_examples`).
            FileNotFoundError: The file is missing.
        """
        return self.read_examples(data_dir, self.dev_file, "dev")

    def get_test_examples(self, data_dir):
        """Reads the examples to predict from `test_file`.

        Args:
            data_dir: The task's data folder.

        Returns:
            A list of `InputExample`s (see `read_examples`).

        Raises:
            ValueError: The task has no test file, or the file is bad (see `read_examples`).
            FileNotFoundError: The file is missing.
        """
        return self.read_examples(data_dir, self.test_file, "test")

    def get_extra_dev_examples(self, data_dir):
        """Reads the further evaluation sets of `extra_dev_files` whose files are there.

        A set whose file is missing is left out (mnli's mismatched sets: the original reads only
        the matched ones). Guids and messages name a set `dev_<name>`.

        Args:
            data_dir: The task's data folder.

        Returns:
            A dict: set name -> list of `InputExample`s.

        Raises:
            ValueError: A set's file is bad (see `read_examples`).
        """
        return {
            name: self.read_examples(data_dir, spec, f"dev_{name}")
            for name, spec in self.extra_dev_files.items()
            if file_exists(os.path.join(data_dir, spec.path))
        }

    def get_extra_test_examples(self, data_dir):
        """Reads the further prediction sets of `extra_test_files` whose files are there.

        A set whose file is missing is left out. Guids and messages name a set `test_<name>`.

        Args:
            data_dir: The task's data folder.

        Returns:
            A dict: set name -> `(submission stem or None, list of InputExample)`.

        Raises:
            ValueError: A set's file is bad (see `read_examples`).
        """
        return {
            name: (stem, self.read_examples(data_dir, spec, f"test_{name}"))
            for name, (stem, spec) in self.extra_test_files.items()
            if file_exists(os.path.join(data_dir, spec.path))
        }

    def read_examples(self, data_dir, spec, split):
        """Reads the examples of one `TsvFile`.

        Each example's guid is `<set name>-<id>`: the set name is `spec.set_name`, else `split`;
        the id is the `spec.guid` column's cell, else the row's 0-based line. Unlabelled rows
        get `spec.dummy_label`; labels are renamed by `label_aliases` and checked
        (`check_label`). Blank lines are skipped.

        Args:
            data_dir: The task's data folder.
            spec: The file's `TsvFile`, or None (the task has no such file).
            split: The set's name, e.g. `"train"` or `"dev_mismatched"` (in guids and messages).

        Returns:
            A list of `InputExample`s, in file order.

        Raises:
            ValueError: `spec` is None; the file is empty, is not UTF-8, or has rows too narrow
                or of different widths; a label is unknown; or no row gives an example. Messages
                name the file (and line).
            FileNotFoundError: The file is missing.
        """
        if spec is None:
            raise ValueError(f"task {_describe(self)} has no {split} file")
        path = find_data_file(self, data_dir, spec.path, split)
        set_name = spec.set_name or split
        table = read_table(path, spec.columns_read())
        examples = []
        for line, row in table[1:] if spec.header else table:
            if spec.where and row[spec.where[0]] != spec.where[1]:
                continue
            if spec.label is None:
                label = spec.dummy_label
            else:
                label = row[spec.label]
                label = check_label(self, self.label_aliases.get(label, label), path, line)
            guid_id = row[spec.guid] if spec.guid is not None else line - 1
            examples.append(
                InputExample(
                    guid=f"{set_name}-{guid_id}",
                    text_a=row[spec.text_a],
                    text_b=row[spec.text_b] if spec.text_b is not None else None,
                    label=label,
                    index=row[spec.index] if spec.index is not None else None,
                )
            )
        if not examples:
            what = f" whose column {spec.where[0]} is {spec.where[1]!r}" if spec.where else ""
            header = " (only a header)" if spec.header and not spec.where else ""
            raise ValueError(f"{path}: no examples{what}{header}{self.missing_file_hint}")
        return examples


# ---------------------------------------------------------------------------------------------
# Registering a task under a name (`catalog` looks names up).

# Task name -> processor class: the built-ins (`catalog` loads them) and the user's.
TASKS = {}


def register_task(name, processor_cls=None, *, replace=False):
    """Registers a processor class under `name`; also usable as a decorator.

    Names are case-insensitive (stripped and lower-cased). A class that does not define its own
    `task_name` gets the registered name as its `task_name`.

    Args:
        name: The task's name, as `--task_name` gives it.
        processor_cls: The `DataProcessor` subclass; None: return a decorator that registers the
            class it decorates.
        replace: Whether a class may replace one already registered under the name.

    Returns:
        `processor_cls`, or, when it is None, the decorator (which returns the class it takes).

    Raises:
        ValueError: `name` is taken and `replace` is False (raised when the class is registered:
            at the call, or when the decorator is applied).
    """
    key = name.strip().lower()

    def register(cls):
        if key in TASKS and not replace:
            raise ValueError(
                f"task {key!r} is already registered ({TASKS[key].__name__}); pass replace=True "
                "to replace it"
            )
        if "task_name" not in vars(cls):
            cls.task_name = key
        TASKS[key] = cls
        return cls

    return register if processor_cls is None else register(processor_cls)

