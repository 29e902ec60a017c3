"""Sentence(-pair) classification tasks: examples, the original's `DataProcessor`, TSV reading and
the task registry (`--task_name` -> processor).

A processor turns a task's files into `InputExample`s, as `run_classifier.py` does. The built-in
tasks (`glue_tasks.py`: the original's cola, mnli, mrpc, xnli and the rest of GLUE;
`multilabel_task.py`) are registered when this module is imported. A new task needs no script
edit: describe its files and register it, and `--task_name=sentiment` finds it:

    from bert_tf.data.classifier_tasks import TsvFile, TsvTask, register_task

    @register_task("sentiment")
    class SentimentTask(TsvTask):
        labels = ["neg", "pos"]
        # train.tsv: a header, then `label<TAB>text` rows; test.tsv: `id<TAB>text`.
        train_file = TsvFile("train.tsv", text_a=1, label=0)
        dev_file = train_file.at("dev.tsv")
        test_file = TsvFile("test.tsv", text_a=1, index=0)

A subclass written the original way (overriding `get_*_examples`, reading with `_read_tsv`) works
too; only the `TsvTask` readers check column counts and labels against `get_labels()`.

TSV files are read as the original reads them (tab-separated, no quote character: a `"` is a
plain character) but as UTF-8, with csv's field size limit raised to 2**31 - 1 characters for the
read (its default, 128 KiB, rejects a long document with "field larger than field limit"); a bad
file is an error naming the file and its 1-based line. Blank lines are skipped.
"""

import contextlib
import csv
import dataclasses
import inspect
import io
import math
import os

# Large enough for any document, small enough for a C long on every platform (sys.maxsize is not).
CSV_FIELD_SIZE_LIMIT = 2**31 - 1


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
        return [row for _, row in _tsv_rows(input_file, quotechar)]


def _describe(processor):
    return getattr(processor, "task_name", None) or type(processor).__name__


def format_names(names, limit=20):
    """A label list for a message, shortened when long (a multi-label task may have hundreds)."""
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


# ---------------------------------------------------------------------------------------------
# Reading TSV files.


def _is_remote(path):
    return "://" in os.fspath(path)  # gs://...: read through TensorFlow's gfile, as the original


def file_exists(path):
    if _is_remote(path):
        import tensorflow as tf  # only for remote paths: the rest of this module is TF-free

        return tf.io.gfile.exists(path)
    return os.path.isfile(path)


def _read_bytes(path):
    if _is_remote(path):
        import tensorflow as tf

        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def _open_text(path):
    # utf-8-sig: a byte-order mark (some Windows editors write one) must not become part of a cell;
    # newline="": csv handles \r\n itself.
    if _is_remote(path):
        return io.TextIOWrapper(io.BytesIO(_read_bytes(path)), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _bad_utf8(path, error):
    """The ValueError for a file that is not UTF-8, naming the line of its first bad byte."""
    data = _read_bytes(path)
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return ValueError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at byte {column} of the "
            "line); save the file as UTF-8"
        )
    return ValueError(f"{path}: not valid UTF-8 ({error})")


@contextlib.contextmanager
def _field_size_limit(limit):
    previous = csv.field_size_limit()
    csv.field_size_limit(max(previous, limit))
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _tsv_rows(path, quotechar=None):
    """(1-based line number, cells) for every row of a TSV file, blank rows ([]) included."""
    if not file_exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    rows = []
    with _field_size_limit(CSV_FIELD_SIZE_LIMIT), _open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quotechar=quotechar)
        try:
            for row in reader:
                rows.append((reader.line_num, row))
        except UnicodeDecodeError as e:
            raise _bad_utf8(path, e) from e
        except csv.Error as e:  # e.g. a field over the limit, NUL bytes
            raise ValueError(f"{path}:{reader.line_num}: {e}") from e
    return rows


def read_table(path, columns_read=0):
    """The non-blank rows of a TSV file as (line number, cells), all as wide as the first row.

    `columns_read`: how many columns the reader needs (1 + the largest index it reads). An empty
    file, a first row narrower than that, or a row whose width differs from the first row's is a
    ValueError naming the file and line.
    """
    table = [(line, row) for line, row in _tsv_rows(path) if row]
    if not table:
        raise ValueError(f"{path}: no examples (the file is empty)")
    first_line, first = table[0]
    if len(first) < columns_read:
        raise ValueError(
            f"{path}:{first_line}: {len(first)} tab-separated columns, but the task reads "
            f"{columns_read} (its highest column index is {columns_read - 1})"
        )
    for line, row in table:
        if len(row) != len(first):
            raise ValueError(
                f"{path}:{line}: {len(row)} tab-separated columns, expected {len(first)} as on "
                f"line {first_line} (a tab inside a text, or a missing cell?)"
            )
    return table


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


def read_text_lines(path):
    """(1-based line number, line without its end) for every line of a UTF-8 text file."""
    if not file_exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with _open_text(path) as f:
        try:
            return [(n, line.rstrip("\r\n")) for n, line in enumerate(f, 1)]
        except UnicodeDecodeError as e:
            raise _bad_utf8(path, e) from e


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


def read_split(processor, split, data_dir=None, tfds_name=None, tfds_data_dir=None, tfds_download=False):
    """A split's examples and its extra sets, from `data_dir`'s files or, with `tfds_name`,
    through TFDS: `(examples, extras)`; extras are name -> examples for "dev" (mnli's
    mismatched set) and name -> (submission stem, examples) for "test"."""
    if tfds_name:
        from bert_tf.data.tfds_sources import read_tfds_examples

        def read(which):
            return read_tfds_examples(processor, which, tfds_name, tfds_data_dir, download=tfds_download)

        examples = read(split)
        source = processor.tfds
        if split == "dev":
            return examples, {name: read(("dev", name)) for name in source.extra_dev}
        if split == "test":
            stems = {name: stem for name, (stem, _) in getattr(processor, "extra_test_files", {}).items()}
            return examples, {name: (stems.get(name), read(("test", name))) for name in source.extra_test}
        return examples, {}
    examples = getattr(processor, f"get_{split}_examples")(data_dir)
    if split == "dev":
        return examples, processor.get_extra_dev_examples(data_dir)
    if split == "test":
        return examples, processor.get_extra_test_examples(data_dir)
    return examples, {}


# ---------------------------------------------------------------------------------------------
# The registry: task name -> processor class.

_TASKS = {}


def register_task(name, processor_cls=None, *, replace=False):
    """Registers a processor class under `name` (case-insensitive); also usable as a decorator.

    Registering a taken name is a ValueError unless `replace=True`.
    """
    key = name.strip().lower()

    def register(cls):
        if key in _TASKS and not replace:
            raise ValueError(
                f"task {key!r} is already registered ({_TASKS[key].__name__}); pass replace=True "
                "to replace it"
            )
        if "task_name" not in vars(cls):
            cls.task_name = key
        _TASKS[key] = cls
        return cls

    return register if processor_cls is None else register(processor_cls)


def task_names():
    return sorted(_TASKS)


def create_processor(name, **options):
    """A processor for task `name` (case-insensitive).

    `options` (e.g. xnli_language="zh", labels_file="labels.txt") go to the processor's
    constructor, each only if the constructor has a parameter of that name; None means "not
    given". A required parameter without an option is a ValueError.
    """
    key = name.strip().lower()
    if key not in _TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    cls = _TASKS[key]
    params = inspect.signature(cls).parameters.values()
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    kwargs = {k: v for k, v in options.items() if v is not None and (takes_any or k in accepted)}
    missing = [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in kwargs
    ]
    if missing:
        needs = ", ".join(f"{m} (--{m})" for m in missing)
        raise ValueError(f"task {key!r} needs the option(s) {needs}")
    return cls(**kwargs)


def processor_for_tfds(tfds_name):
    """The first registered task whose TFDS source is `tfds_name` (a version suffix is ignored).

    "glue/mnli" -> "mnli" (mnli-mm reads the same dataset and is registered after it).
    """
    wanted = tfds_name.split(":")[0].strip().lower()
    for key, cls in _TASKS.items():
        source = getattr(cls, "tfds", None)
        if source is not None and source.name.split(":")[0].lower() == wanted:
            return key
    return None


# Registers the built-in tasks; at the end, since they subclass what this module defines.
from bert_tf.data import glue_tasks, multilabel_task  # noqa: E402, F401
