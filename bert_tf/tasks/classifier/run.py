"""A classification run's steps around the one loop (the original run_classifier.py's main,
without its flags): the user's task module and the task's processor, every set read before any
training, the run record, the ClassifierTask, the dev sets' evaluation (eval_results.txt) and the
test sets' predictions (test_results.tsv and the submission file).

A task may have extra dev and test sets beside its own (mnli: the mismatched genres). They are
keyed by name, "" being the task's own set: `{"": dev examples, "mismatched": ...}`.
"""

import dataclasses
import importlib
import importlib.util
import os
import sys

from bert_tf.errors import shown
from bert_tf.runs.record import RESUMED_FIELDS, RunRecord
from bert_tf.tasks.classifier import catalog
from bert_tf.tasks.classifier.inputs import encode_examples
from bert_tf.tasks.classifier.processors import DataProcessor
from bert_tf.tasks.classifier.task import METRIC_FOR_GLUE_TASK, ClassifierTask, write_submission, write_test_results


def import_task_module(name):
    """Imports the user's module that registers more tasks: `name` is a module importable from
    the current folder (as `python -m` finds it) or a .py file. Returns the module. Whatever
    importing raises becomes a ValueError starting with `name` and the error's type; a .py file
    that is not there, a FileNotFoundError starting with `name`."""
    if name.endswith(".py") and not os.path.isfile(name):
        raise FileNotFoundError(f"{name}: no such file")
    try:
        if name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(name))[0], name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        if os.getcwd() not in sys.path:
            sys.path.insert(1, os.getcwd())
        return importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises, say where
        raise ValueError(f"{name}: {type(e).__name__}: {e}") from e


def create_processor(task_name, tfds_name=None, describe_option=str, **options):
    """The processor of `task_name`, or without one, of the task that reads `tfds_name` by
    default (glue/mnli -> mnli). `options` and `describe_option` go to `catalog.create_processor`.
    A ValueError starting `task_name`: none given or found, an unknown task, or one whose
    processor cannot be made (e.g. a missing option, an unreadable labels file)."""
    name = task_name or (tfds_name and catalog.processor_for_tfds(tfds_name))
    if not name:
        raise ValueError(f"{shown.task_name} is required (known tasks: {', '.join(catalog.task_names())})")
    try:
        return catalog.create_processor(name, describe_option=describe_option, **options)
    except (ValueError, FileNotFoundError) as e:
        raise ValueError(f"{shown.task_name}={name}: {e}") from None


@dataclasses.dataclass(frozen=True)
class ClassifierInputs:
    """A run's examples, read before any training; a set not asked for is None or empty."""

    processor: DataProcessor
    train: list | None = None  # InputExamples
    dev: dict = dataclasses.field(default_factory=dict)  # name -> examples
    test: dict = dataclasses.field(default_factory=dict)  # name -> (submission file stem or None, examples)

    def examples(self):
        """Every example of every set."""
        yield from self.train or ()
        for examples in self.dev.values():
            yield from examples
        for _, examples in self.test.values():
            yield from examples

    @property
    def pair(self):
        """Whether text_b is packed: some example of any set read has one."""
        return any(e.text_b is not None for e in self.examples())


def read_inputs(processor, splits, data_dir=None, tfds_name=None, tfds_data_dir=None, tfds_download=False):
    """The examples of `splits` (of "train", "dev", "test") with the task's extra dev and test
    sets, from `data_dir`'s files or through TFDS (`catalog.read_split`); the task's own test set's
    submission file is named after the task's `submission_name`. The readers' ValueError or FileNotFoundError (the
    message names the file or the task) for a missing or bad set."""
    read = {split: catalog.read_split(processor, split, data_dir, tfds_name, tfds_data_dir, tfds_download)
            for split in ("train", "dev", "test") if split in splits}
    dev, dev_extra = read.get("dev", (None, {}))
    test, test_extra = read.get("test", (None, {}))
    return ClassifierInputs(
        processor,
        train=read["train"][0] if "train" in read else None,
        dev={"": dev, **dev_extra} if dev is not None else {},
        test={"": (processor.submission_name, test), **test_extra} if test is not None else {},
    )


def read_transfer(processor, path):
    """The unlabelled examples of `path`, a file in the layout of the task's test file (its columns,
    header and quoting; read as `processor` reads its test set), their labels None. A ValueError or
    FileNotFoundError naming the file otherwise."""
    import tempfile

    layout = getattr(processor, "test_file", None)
    if layout is not None:  # a TsvTask: its test layout, read from the transfer file
        folder, name = os.path.split(os.path.abspath(path))
        examples = processor.read_examples(folder, layout.at(name), "transfer")
    else:  # a processor written the original way reads its data folder's test.tsv
        with tempfile.TemporaryDirectory() as folder:
            os.symlink(os.path.abspath(path), os.path.join(folder, "test.tsv"))
            examples = processor.get_test_examples(folder)
    return [dataclasses.replace(e, label=None, guid=f"transfer-{i}") for i, e in enumerate(examples)]


def classifier_record(processor, pair, do_lower_case, max_seq_length, group_by_length=False, **windows):
    """The run record of a classification run: its task, labels, whether it packs pairs and
    groups its training batches by length, and how it reads long texts (`windows`: max_windows,
    doc_stride, window_pooling; absent: one window, the original's truncation)."""
    return RunRecord(
        kind="classifier", task_name=processor.task_name or type(processor).__name__,
        label_kind=processor.label_kind, labels=processor.get_labels(), pair=pair,
        do_lower_case=do_lower_case, max_seq_length=max_seq_length, group_by_length=group_by_length, **windows,
    )


def fields_to_match(do_train):
    """The record fields an earlier run in the output folder must share with this one: training
    resumes only the same task, in the same batch order; evaluating or predicting may use any run
    with the same head (mnli-mm on an mnli run)."""
    return ("task_name", "label_kind", "labels", *RESUMED_FIELDS) if do_train else ("label_kind", "labels")


@dataclasses.dataclass(frozen=True)
class ClassifierFeatures:
    """`ClassifierInputs` encoded (`encode_examples`' dicts), set by set."""

    train: dict | None  # None without training
    dev: dict  # name -> features
    test: dict  # name -> features


def encode_inputs(inputs: ClassifierInputs):
    """Every set of `inputs` as the model's features; a label the task does not know is a
    ValueError naming the set ("train", "dev", "dev mismatched", "test", ...) and the example."""
    processor = inputs.processor

    def encode(examples, source):
        return encode_examples(examples, processor.get_labels(), processor.label_kind, source)

    return ClassifierFeatures(
        train=encode(inputs.train, "train") if inputs.train is not None else None,
        dev={name: encode(examples, f"dev {name}".strip()) for name, examples in inputs.dev.items()},
        test={name: encode(examples, f"test {name}".strip()) for name, (_, examples) in inputs.test.items()},
    )


def build_task(config, processor, record: RunRecord, vocab_file, length_bucket=None):
    """The ClassifierTask of `record` (labels, kind, casing, max_seq_length, pairs, grouping by
    length, windows), reporting the processor's `metrics` or else what GLUE reports for its task
    (MRPC: F1, CoLA: MCC); batches cut to a multiple of `length_bucket` (None: max_seq_length)."""
    return ClassifierTask(
        config, record.labels, record.label_kind, vocab_file=vocab_file, do_lower_case=record.do_lower_case,
        max_seq_length=record.max_seq_length, pair=record.pair, length_bucket=length_bucket,
        group_by_length=record.group_by_length, max_windows=record.max_windows, doc_stride=record.doc_stride,
        window_pooling=record.window_pooling,
        extra_metrics=getattr(processor, "metrics", None) or METRIC_FOR_GLUE_TASK.get(processor.submission_name, ()),
    )


def named(results, name):
    """An extra eval set's results under its name: eval_accuracy -> eval_mismatched_accuracy,
    loss -> mismatched_loss (global_step stays); the task's own set ("") keeps its keys."""
    if not name:
        return results
    renamed = {}
    for key, value in results.items():
        if key.startswith("eval_"):
            key = f"eval_{name}_{key[5:]}"
        elif key != "global_step":
            key = f"{name}_{key}"
        renamed[key] = value
    return renamed


def evaluate(trainer, inputs: ClassifierInputs, features: ClassifierFeatures, announce=None):
    """Evaluates each dev set, its results `named` after it, and writes them all in one
    eval_results.txt (the chief does). `announce(name, examples)` is called before each set (a
    script logs it). Returns the results."""
    results = {}
    for name, examples in inputs.dev.items():
        if announce:
            announce(name, len(examples))
        results.update(named(trainer.evaluate(features.dev[name]), name))
    trainer.write_eval_results(results)
    return results


def predict(trainer, inputs: ClassifierInputs, features: ClassifierFeatures, announce=None):
    """Predicts each test set and, on the chief, writes the original's test_results.tsv
    (test_results_<name>.tsv for an extra set) and its submission file in the trainer's
    output_dir: `<stem>.tsv` (MRPC.tsv, MNLI-mm.tsv), test_predictions[_<name>].tsv for a set
    without a stem. `announce(name, examples)` is called before each set. Returns the
    `(test results, submission)` paths written, in order; none on another worker."""
    processor, output_dir, written = inputs.processor, trainer.settings.output_dir, []
    for name, (stem, examples) in inputs.test.items():
        if announce:
            announce(name, len(examples))
        predictions = trainer.predict(features.test[name])
        if not trainer.is_chief:
            continue  # every worker predicts (the batches are split between them); one writes
        suffix = f"_{name}" if name else ""
        results = os.path.join(output_dir, f"test_results{suffix}.tsv")
        write_test_results(results, predictions, len(examples))
        submission = os.path.join(output_dir, f"{stem}.tsv" if stem else f"test_predictions{suffix}.tsv")
        write_submission(submission, examples, predictions, processor.get_labels(), processor.label_kind)
        written.append((results, submission))
    return written


def __getattr__(name):
    """Names this module held before, as deprecated aliases (see `bert_tf/_deprecated.py`)."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
