"""A classification run's steps without flags: the user's task module, choosing the task, every
set read (MNLI's mismatched ones too), pairs, the run record and which of its fields an earlier
run must share, encoding, the metrics of the task, and the eval and prediction files, on tiny
files made here."""

import sys
import types

import numpy as np
import pytest

from bert_tf.runs.record import RunRecord
from bert_tf.tasks.classifier import processors
from bert_tf.tasks.classifier import run as classifier_run
from bert_tf.tasks.classifier.glue import ColaProcessor, MnliProcessor, MrpcProcessor
from bert_tf.tasks.classifier.processors import DataProcessor, InputExample
from bert_tf.training import run as training_run
from tests.tiny import tiny_config

MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def mrpc(tmp_path):
    """MRPC's layout: 3 train rows, 2 dev rows, 2 test rows (indexes 30, 31)."""
    d = tmp_path / "MRPC"
    _write(d / "train.tsv", [MRPC_HEADER, "1\t1\t2\tthe cat\ta cat", "0\t3\t4\tthe dog\ta cat",
                             "1\t5\t6\ta cat\tthe mat"])
    _write(d / "dev.tsv", [MRPC_HEADER, "0\t7\t8\tthe dog\tthe mat", "1\t9\t10\tthe cat\ta dog"])
    _write(d / "test.tsv", ["index\t#1 ID\t#2 ID\t#1 String\t#2 String", "30\t1\t2\ta cat\ta dog",
                            "31\t3\t4\tred\tblue"])
    return d


def _mnli_row(index, premise, hypothesis, label, dev=False):
    parses = ["p"] * 4
    labels = [label] * (5 if dev else 1)
    return "\t".join([str(index), "0", "0", "genre", *parses, premise, hypothesis, *labels, label])


@pytest.fixture
def mnli(tmp_path):
    """MNLI's layout with matched and mismatched dev and test sets."""
    d = tmp_path / "MNLI"

    def header(columns):  # as wide as the rows below it
        return "\t".join(f"column{i}" for i in range(columns))

    _write(d / "train.tsv", [header(12), _mnli_row(1, "a cat", "a dog", "neutral")])
    _write(d / "dev_matched.tsv", [header(16), _mnli_row(2, "the cat", "a cat", "entailment", dev=True)])
    _write(d / "dev_mismatched.tsv", [header(16), _mnli_row(3, "red", "blue", "contradiction", dev=True),
                                      _mnli_row(4, "big", "small", "contradiction", dev=True)])
    test_row = "\t".join(["{}", "0", "0", "genre", *["p"] * 4, "a cat", "a mat"])
    _write(d / "test_matched.tsv", [header(10), test_row.format(5)])
    _write(d / "test_mismatched.tsv", [header(10), test_row.format(6), test_row.format(7)])
    return d


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the task registry, so a test's registrations do not leak."""
    monkeypatch.setattr(processors, "TASKS", dict(processors.TASKS))


class Sets(DataProcessor):
    """Examples given here, not read from files; any label is accepted (no reader checks them)."""

    labels = ["no", "yes"]

    def __init__(self, train=(), dev=(), test=(), extra_dev=None, extra_test=None):
        self.sets = {"train": list(train), "dev": list(dev), "test": list(test)}
        self.extra_dev, self.extra_test = extra_dev or {}, extra_test or {}

    def get_labels(self):
        return list(self.labels)

    def get_train_examples(self, data_dir):
        return self.sets["train"]

    def get_dev_examples(self, data_dir):
        return self.sets["dev"]

    def get_test_examples(self, data_dir):
        return self.sets["test"]

    def get_extra_dev_examples(self, data_dir):
        return self.extra_dev

    def get_extra_test_examples(self, data_dir):
        return self.extra_test


# ---------------------------------------------------------------------------------------------
# The user's task module and the task.

USER_TASK = """
from bert_tf.tasks.classifier.processors import TsvFile, TsvTask, register_task

@register_task("animals_here")
class Animals(TsvTask):
    labels = ["0", "1"]
    train_file = TsvFile("train.tsv", text_a=3, text_b=4, label=0)
"""


def test_a_task_module_from_a_file_registers_its_tasks(tmp_path, registry):
    path = tmp_path / "user_tasks.py"
    path.write_text(USER_TASK)
    module = classifier_run.import_task_module(str(path))
    assert processors.TASKS["animals_here"] is module.Animals
    assert type(classifier_run.create_processor("Animals_Here")).__name__ == "Animals"


def test_a_task_module_by_name_is_found_in_the_current_folder(tmp_path, registry, monkeypatch):
    (tmp_path / "user_tasks_by_name.py").write_text(USER_TASK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "user_tasks_by_name", raising=False)
    try:
        classifier_run.import_task_module("user_tasks_by_name")
    finally:
        sys.modules.pop("user_tasks_by_name", None)
    assert "animals_here" in processors.TASKS


def test_a_task_module_that_fails_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^nowhere/tasks\.py: no such file$"):
        classifier_run.import_task_module("nowhere/tasks.py")
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1 / 0\n")
    with pytest.raises(ValueError, match=rf"^{broken}: ZeroDivisionError: division by zero$"):
        classifier_run.import_task_module(str(broken))
    with pytest.raises(ValueError, match=r"^no_such_task_module_xyz: ModuleNotFoundError: "):
        classifier_run.import_task_module("no_such_task_module_xyz")


def test_the_task_is_named_or_the_tfds_datasets_default(tmp_path):
    assert type(classifier_run.create_processor("MRPC")) is MrpcProcessor
    assert type(classifier_run.create_processor(None, "glue/mnli:2.0.0")) is MnliProcessor
    assert type(classifier_run.create_processor("mnli-mm", "glue/mnli")).__name__ == "MnliMismatchedProcessor"
    with pytest.raises(ValueError, match=r"^task_name is required \(known tasks: cola, .*mrpc"):
        classifier_run.create_processor(None, "glue/no_such_dataset")
    with pytest.raises(ValueError, match=r"^task_name=nope: unknown task 'nope'"):
        classifier_run.create_processor("nope")
    needs = r"^task_name=multilabel: task 'multilabel' needs the option\(s\) labels_file$"
    with pytest.raises(ValueError, match=needs):
        classifier_run.create_processor("multilabel")
    # How a script names the option: its flag.
    with pytest.raises(ValueError, match=r"needs the option\(s\) labels_file \(--labels_file\)$"):
        classifier_run.create_processor("multilabel", None, lambda name: f"{name} (--{name})")
    missing = tmp_path / "labels.txt"
    with pytest.raises(ValueError, match=rf"^task_name=multilabel: {missing}: no such file"):
        classifier_run.create_processor("multilabel", labels_file=str(missing))


# ---------------------------------------------------------------------------------------------
# Reading every set; pairs; the run record.


def test_an_mrpc_folder_is_read_set_by_set(mrpc):
    inputs = classifier_run.read_inputs(MrpcProcessor(), ["train", "dev", "test"], str(mrpc))
    assert [e.guid for e in inputs.train] == ["train-1", "train-2", "train-3"]
    assert list(inputs.dev) == [""] and [e.label for e in inputs.dev[""]] == ["0", "1"]
    assert list(inputs.test) == [""]
    stem, test = inputs.test[""]
    assert stem == "MRPC"
    assert [(e.index, e.text_a, e.text_b) for e in test] == [("30", "a cat", "a dog"), ("31", "red", "blue")]
    assert inputs.pair

    only_dev = classifier_run.read_inputs(MrpcProcessor(), ["dev"], str(mrpc))
    assert only_dev.train is None and only_dev.test == {} and len(only_dev.dev[""]) == 2
    (mrpc / "dev.tsv").unlink()
    with pytest.raises(FileNotFoundError, match="no dev file 'dev.tsv' in data_dir"):
        classifier_run.read_inputs(MrpcProcessor(), ["train", "dev"], str(mrpc))
    assert classifier_run.read_inputs(MrpcProcessor(), ["train", "test"], str(mrpc)).dev == {}


def test_mnli_reads_its_mismatched_dev_and_test_sets_when_they_are_there(mnli):
    inputs = classifier_run.read_inputs(MnliProcessor(), ["dev", "test"], str(mnli))
    assert {name: [e.guid for e in examples] for name, examples in inputs.dev.items()} == {
        "": ["dev_matched-2"], "mismatched": ["dev_mismatched-3", "dev_mismatched-4"],
    }
    assert {name: (stem, len(examples)) for name, (stem, examples) in inputs.test.items()} == {
        "": ("MNLI-m", 1), "mismatched": ("MNLI-mm", 2),
    }
    (mnli / "dev_mismatched.tsv").unlink()
    assert list(classifier_run.read_inputs(MnliProcessor(), ["dev"], str(mnli)).dev) == [""]


def test_pairs_are_packed_when_any_set_has_a_second_text(tmp_path):
    one = [InputExample("a", "the cat", label="yes")]
    two = [InputExample("b", "the cat", "a dog", label="no")]
    splits = ["train", "dev", "test"]
    assert not classifier_run.read_inputs(Sets(train=one, dev=one, test=one), splits).pair
    assert classifier_run.read_inputs(Sets(train=one, dev=one, test=two), splits).pair
    assert classifier_run.read_inputs(Sets(train=one, dev=one, extra_dev={"other": two}), splits).pair
    # A set not read does not count.
    assert not classifier_run.read_inputs(Sets(train=one, test=two), ["train"]).pair
    cola = tmp_path / "CoLA"
    _write(cola / "train.tsv", ["src\t1\t\tThe cat sat.", "src\t0\t*\tCat the sat."])
    assert not classifier_run.read_inputs(ColaProcessor(), ["train"], str(cola)).pair


def test_the_run_record_says_the_task_its_labels_and_pairs():
    record = classifier_run.classifier_record(MnliProcessor(), True, False, 64)
    assert record == RunRecord(
        kind="classifier", task_name="mnli", label_kind="single", labels=("contradiction", "entailment", "neutral"),
        pair=True, do_lower_case=False, max_seq_length=64,
    )
    # An unregistered processor: its class name.
    assert classifier_run.classifier_record(Sets(), False, True, 128).task_name == "Sets"


def test_training_continues_only_the_same_task_but_the_same_head_may_evaluate(tmp_path):
    """mnli-mm evaluates an mnli run (same labels); training it there would mix two tasks."""
    out = tmp_path / "mnli_run"
    classifier_run.classifier_record(MnliProcessor(), True, True, 128).write(out)
    mnli_mm = classifier_run.create_processor("mnli-mm")
    record = classifier_run.classifier_record(mnli_mm, True, True, 128)
    assert training_run.check_earlier_run(str(out), record, classifier_run.fields_to_match(do_train=False)) == []
    with pytest.raises(ValueError, match="holds a run of task 'mnli', not 'mnli-mm'"):
        training_run.check_earlier_run(str(out), record, classifier_run.fields_to_match(do_train=True))
    # Another head is refused either way.
    cola = classifier_run.classifier_record(ColaProcessor(), False, True, 128)
    with pytest.raises(ValueError, match="holds a run of task 'mnli' with labels"):
        training_run.check_earlier_run(str(out), cola, classifier_run.fields_to_match(do_train=False))


# ---------------------------------------------------------------------------------------------
# Encoding; the task's metrics.


def test_every_set_is_encoded_and_a_bad_label_names_its_set():
    processor = Sets(
        train=[InputExample("t0", "a", label="yes"), InputExample("t1", "b", "c", label="no")],
        dev=[InputExample("d0", "a", label="no")],
        test=[InputExample("s0", "x")],
        extra_dev={"other": [InputExample("o0", "a", label="yes")]},
    )
    inputs = classifier_run.read_inputs(processor, ["train", "dev", "test"])
    features = classifier_run.encode_inputs(inputs)
    assert features.train["label"].tolist() == [1, 0] and features.train["text_b"].tolist() == ["", "c"]
    assert {name: f["label"].tolist() for name, f in features.dev.items()} == {"": [0], "other": [1]}
    assert list(features.test) == [""] and features.test[""]["text_a"].tolist() == ["x"]
    assert classifier_run.encode_inputs(classifier_run.read_inputs(processor, ["dev"])).train is None

    processor.extra_dev = {"other": [InputExample("o1", "a", label="maybe")]}
    with pytest.raises(ValueError, match=r"^dev other: example 'o1' has label 'maybe'"):
        classifier_run.encode_inputs(classifier_run.read_inputs(processor, ["dev"]))


@pytest.mark.parametrize(
    "processor, metrics",
    [(MrpcProcessor(), ("f1",)), (ColaProcessor(), ("mcc",)), (MnliProcessor(), ()), (Sets(), ())],
)
def test_the_task_reports_what_glue_reports_for_it(processor, metrics):
    record = classifier_run.classifier_record(processor, True, True, 16)
    task = classifier_run.build_task(tiny_config(), processor, record, None)
    assert task.extra_metrics == metrics and task.labels == processor.get_labels() and task.max_seq_length == 16


def test_a_processors_own_metrics_come_first():
    processor = MrpcProcessor()
    processor.metrics = ("mcc",)
    record = classifier_run.classifier_record(processor, True, True, 16)
    assert classifier_run.build_task(tiny_config(), processor, record, None).extra_metrics == ("mcc",)


# ---------------------------------------------------------------------------------------------
# Evaluation and prediction (a stand-in trainer: what it returns is written here).


def test_named_prefixes_an_extra_sets_keys():
    results = {"eval_accuracy": 0.5, "eval_loss": 1.0, "loss": 2.0, "global_step": 7}
    assert classifier_run.named(results, "") == results
    assert classifier_run.named(results, "mismatched") == {
        "eval_mismatched_accuracy": 0.5, "eval_mismatched_loss": 1.0, "mismatched_loss": 2.0, "global_step": 7,
    }


def _trainer(output_dir, chief=True, outputs=None):
    calls, written = [], []

    def run(data):
        calls.append(data["text_a"].tolist())
        return outputs[tuple(data["text_a"])]

    trainer = types.SimpleNamespace(
        evaluate=run, predict=run, write_eval_results=written.append, is_chief=chief,
        settings=types.SimpleNamespace(output_dir=str(output_dir)),
    )
    return trainer, calls, written


def test_every_dev_set_is_evaluated_and_written_in_one_file(mnli, tmp_path):
    inputs = classifier_run.read_inputs(MnliProcessor(), ["dev"], str(mnli))
    outputs = {
        ("the cat",): {"eval_accuracy": 1.0, "eval_loss": 0.5, "loss": 0.25, "global_step": 9},
        ("red", "big"): {"eval_accuracy": 0.5, "eval_loss": 0.75, "loss": 0.125, "global_step": 9},
    }
    trainer, calls, written = _trainer(tmp_path, outputs=outputs)
    announced = []
    results = classifier_run.evaluate(
        trainer, inputs, classifier_run.encode_inputs(inputs), lambda *a: announced.append(a)
    )
    assert results == {
        "eval_accuracy": 1.0, "eval_loss": 0.5, "loss": 0.25, "global_step": 9,
        "eval_mismatched_accuracy": 0.5, "eval_mismatched_loss": 0.75, "mismatched_loss": 0.125,
    }
    assert written == [results] and calls == [["the cat"], ["red", "big"]]
    assert announced == [("", 1), ("mismatched", 2)]


def _probabilities(*rows):
    return {"probabilities": np.array(rows, np.float32)}


def test_every_test_set_gets_the_originals_file_and_a_submission(mnli, tmp_path):
    inputs = classifier_run.read_inputs(MnliProcessor(), ["test"], str(mnli))
    # MNLI's labels: contradiction, entailment, neutral.
    outputs = {
        ("a cat",): _probabilities([0.25, 0.5, 0.25]),
        ("a cat", "a cat"): _probabilities([0.5, 0.25, 0.25], [0.0, 0.25, 0.75]),
    }
    trainer, calls, _ = _trainer(tmp_path, outputs=outputs)
    written = classifier_run.predict(trainer, inputs, classifier_run.encode_inputs(inputs))
    assert written == [
        (str(tmp_path / "test_results.tsv"), str(tmp_path / "MNLI-m.tsv")),
        (str(tmp_path / "test_results_mismatched.tsv"), str(tmp_path / "MNLI-mm.tsv")),
    ]
    assert (tmp_path / "test_results.tsv").read_text() == "0.25\t0.5\t0.25\n"
    assert (tmp_path / "test_results_mismatched.tsv").read_text() == "0.5\t0.25\t0.25\n0.0\t0.25\t0.75\n"
    assert (tmp_path / "MNLI-m.tsv").read_text() == "index\tprediction\n5\tentailment\n"
    assert (tmp_path / "MNLI-mm.tsv").read_text() == "index\tprediction\n6\tcontradiction\n7\tneutral\n"


def test_sets_without_a_submission_name_and_another_worker(tmp_path):
    """A task outside GLUE: test_predictions[_<set>].tsv, rows by position. Another worker
    predicts too (its share of the batches) but writes nothing."""
    processor = Sets(test=[InputExample("s0", "x"), InputExample("s1", "y")],
                     extra_test={"other": (None, [InputExample("o0", "z")])})
    inputs = classifier_run.read_inputs(processor, ["test"])
    outputs = {("x", "y"): _probabilities([0.75, 0.25], [0.25, 0.75]), ("z",): _probabilities([0.5, 0.5])}
    worker, calls, _ = _trainer(tmp_path / "worker", chief=False, outputs=outputs)
    assert classifier_run.predict(worker, inputs, classifier_run.encode_inputs(inputs)) == []
    assert calls == [["x", "y"], ["z"]] and not (tmp_path / "worker").exists()

    chief, _, _ = _trainer(tmp_path, outputs=outputs)
    announced = []
    classifier_run.predict(chief, inputs, classifier_run.encode_inputs(inputs), lambda *a: announced.append(a))
    assert (tmp_path / "test_predictions.tsv").read_text() == "index\tprediction\n0\tno\n1\tyes\n"
    assert (tmp_path / "test_results.tsv").read_text() == "0.75\t0.25\n0.25\t0.75\n"
    # A tie: the first label, as argmax picks.
    assert (tmp_path / "test_predictions_other.tsv").read_text() == "index\tprediction\n0\tno\n"
    assert (tmp_path / "test_results_other.tsv").read_text() == "0.5\t0.5\n"
    assert announced == [("", 2), ("other", 1)]
