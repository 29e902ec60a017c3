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

# What a task module (`--task_module`) uses; TASKS is the registry's state, read through `catalog`.
__all__ = ["DataProcessor", "InputExample", "TsvFile", "TsvTask", "check_label", "find_data_file", "register_task"]


@dataclasses.dataclass
class InputExample:
    """One example; the original's fields plus `index`."""

    guid: str  # unique id for logs, e.g. "train-12"
    text_a: str
    text_b: str | None = None  # None for single-sentence tasks
    # A label name (a float as a string for regression), a list of names for multi-label tasks,
    # None for an unlabelled test row (the original's four tasks put a placeholder name there).
    label: str | list[str] | None = None
    # The id a GLUE submission file wants for this row (the test file's index/id column, TFDS's
    # 'idx'); None: use the example's position.
    index: str | None = None


class DataProcessor:
    """The original's interface for reading a task, so an original subclass ports unchanged."""

    label_kind = "single"  # "single" (softmax), "regression" (one float output), "multi" (sigmoids)
    submission_name = None  # GLUE submission file stem ("MRPC" -> MRPC.tsv); None outside GLUE
    tfds = None  # a tfds_sources.TfdsSource to read the task through tensorflow-datasets, or None
    task_name = None  # set by `register_task`; used in error messages

    def get_train_examples(self, data_dir):
        """The train set's `InputExample`s."""
        raise NotImplementedError()

    def get_dev_examples(self, data_dir):
        """The dev (evaluation) set's `InputExample`s."""
        raise NotImplementedError()

    def get_test_examples(self, data_dir):
        """The examples to predict."""
        raise NotImplementedError()

    def get_labels(self):
        """Label names; the class order of the model's outputs. Regression tasks: []."""
        raise NotImplementedError()

    def get_extra_dev_examples(self, data_dir):
        """Further evaluation sets, name -> examples (mnli: {"mismatched": ...})."""
        del data_dir
        return {}

    def get_extra_test_examples(self, data_dir):
        """Further prediction sets, name -> (submission file stem or None, examples)."""
        del data_dir
        return {}

    @classmethod
    def _read_tsv(cls, input_file, quotechar=None):
        """All rows of a tab-separated file, blank lines included (as lists of cells)."""
        return [row for _, row in tsv_rows(input_file, quotechar)]


def _describe(processor):
    return getattr(processor, "task_name", None) or type(processor).__name__


def check_label(processor, label, path, line):
    """Returns `label` if the task knows it; otherwise a ValueError naming the file and line."""
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
    """The full path of a split's file; FileNotFoundError naming the task if it is missing."""
    path = os.path.join(data_dir, relative_path)
    if not file_exists(path):
        hint = getattr(processor, "missing_file_hint", "")
        raise FileNotFoundError(
            f"task {_describe(processor)}: no {split} file {relative_path!r} in data_dir "
            f"{os.fspath(data_dir)!r} ({path} does not exist){hint}"
        )
    return path


# ---------------------------------------------------------------------------------------------
# Declarative TSV tasks.


@dataclasses.dataclass(frozen=True)
class TsvFile:
    """Where one split's examples sit in a TSV file. Columns are 0-based; negative: from the end."""

    path: str  # relative to data_dir
    text_a: int
    text_b: int | None = None
    label: int | None = None  # None: unlabelled rows (a test file)
    index: int | None = None  # the submission id column (GLUE test files: 0)
    guid: int | None = None  # column giving the guid's id part; None: the row's 0-based line
    header: bool = True  # skip the first row
    set_name: str | None = None  # the guid's prefix; None: the split ("train", "dev", "test")
    dummy_label: str | None = None  # label of unlabelled rows (the original's test placeholders)
    where: tuple[int, str] | None = None  # keep only rows whose column equals the value

    def at(self, path, **changes):
        """The same layout in another file (with `changes`), e.g. `train_file.at("dev.tsv")`."""
        return dataclasses.replace(self, path=path, **changes)

    def columns_read(self):
        used = [self.text_a, self.text_b, self.label, self.index, self.guid]
        used += [self.where[0]] if self.where else []
        return max(c + 1 if c >= 0 else -c for c in used if c is not None)


class TsvTask(DataProcessor):
    """A task whose splits are TSV files described by `TsvFile`s (class attributes or properties).

    Every row is checked: as many columns as the file's first row, a label from `labels` (a
    finite number for `label_kind = "regression"`), after `label_aliases` renames it.
    """

    labels = ()
    label_aliases = {}  # raw label -> label name (xnli's "contradictory" -> "contradiction")
    train_file = None
    dev_file = None
    test_file = None
    extra_dev_files = {}  # name -> TsvFile
    extra_test_files = {}  # name -> (submission stem or None, TsvFile)
    missing_file_hint = ""  # appended to the message for a missing file

    def get_labels(self):
        return list(self.labels)

    def get_train_examples(self, data_dir):
        return self.read_examples(data_dir, self.train_file, "train")

    def get_dev_examples(self, data_dir):
        return self.read_examples(data_dir, self.dev_file, "dev")

    def get_test_examples(self, data_dir):
        return self.read_examples(data_dir, self.test_file, "test")

    # Extra sets are read when their files are there (mnli's mismatched sets: the original reads
    # only the matched ones).
    def get_extra_dev_examples(self, data_dir):
        return {
            name: self.read_examples(data_dir, spec, f"dev_{name}")
            for name, spec in self.extra_dev_files.items()
            if file_exists(os.path.join(data_dir, spec.path))
        }

    def get_extra_test_examples(self, data_dir):
        return {
            name: (stem, self.read_examples(data_dir, spec, f"test_{name}"))
            for name, (stem, spec) in self.extra_test_files.items()
            if file_exists(os.path.join(data_dir, spec.path))
        }

    def read_examples(self, data_dir, spec, split):
        """The examples of one TsvFile; `split` names the set in guids and messages."""
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
    """Registers a processor class under `name` (case-insensitive); also usable as a decorator.

    Registering a taken name is a ValueError unless `replace=True`.
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

