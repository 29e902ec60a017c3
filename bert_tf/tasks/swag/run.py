"""A SWAG run's steps around the one loop (run_swag.py's main, without its flags): reading a
split's CSV file, the run record, the task and its inputs, evaluation (eval_results.txt) and
prediction's files (test_results.tsv, test_predictions.tsv)."""

import dataclasses
import os

from bert_tf.data.text_files import split_file
from bert_tf.runs.record import RESUMED_FIELDS, RunRecord
from bert_tf.tasks.classifier.task import write_submission, write_test_results
from bert_tf.tasks.swag.reader import NUM_CHOICES, SPLIT_FILES, encode_examples, read_swag
from bert_tf.tasks.swag.task import SwagTask

TASK_NAME = "swag"
RESULTS_FILE = "test_results.tsv"  # the choices' probabilities, as run_classifier's
SUBMISSION_FILE = "test_predictions.tsv"  # `index<TAB>prediction`


def read_split(data_dir, split):
    """The examples of a split ("train", "dev" or "test"): its CSV file in `data_dir`
    (`reader.SPLIT_FILES`; the test file has no label column). FileNotFoundError (`split_file`'s)
    when `data_dir` lacks the file; the reader's ValueError, naming the file and line, for bad data."""
    path = split_file(data_dir, split, SPLIT_FILES[split])
    return read_swag(path, split, labelled=split != "test")


def read_transfer(path):
    """The examples of `path`, a transfer file in test.csv's layout (a label column, if any, is
    checked as the test file's is, and not learned from); a ValueError naming the file otherwise."""
    return read_swag(path, "transfer", labelled=False)


def swag_record(do_lower_case, max_seq_length, group_by_length=False):
    """The run record of a SWAG run (`group_by_length`: its training batches' grouping)."""
    return RunRecord(
        kind="swag", task_name=TASK_NAME, num_choices=NUM_CHOICES, do_lower_case=do_lower_case,
        max_seq_length=max_seq_length, group_by_length=group_by_length,
    )


def fields_to_match(do_train):
    """The record fields an earlier run in output_dir must share with this one: a run that
    trains resumes that run (the same task, in the same batch order); one that only evaluates or
    predicts needs a model of the same kind with as many choices."""
    return ("task_name", "kind", "num_choices", *RESUMED_FIELDS) if do_train else ("kind", "num_choices")


def build_task(bert_config, record: RunRecord, vocab_file, length_bucket=None):
    """The SwagTask of `record`'s choices, casing, max_seq_length and grouping by length, its
    batches cut to a multiple of `length_bucket` (None: max_seq_length)."""
    return SwagTask(
        bert_config, record.num_choices, vocab_file=vocab_file, do_lower_case=record.do_lower_case,
        max_seq_length=record.max_seq_length, length_bucket=length_bucket, group_by_length=record.group_by_length,
    )


def evaluate(trainer, examples):
    """Accuracy and loss on the dev `examples`, written to eval_results.txt in the trainer's
    output_dir; returns them."""
    results = trainer.evaluate(encode_examples(examples))
    trainer.write_eval_results(results)
    return results


@dataclasses.dataclass(frozen=True)
class PredictionFiles:
    results_file: str
    submission_file: str


def write_predictions(output_dir, examples, predictions, choice_names):
    """For the test `examples` and the model's `predictions` (`probabilities`, float
    `[rows, num_choices]`; rows past the examples are padding): test_results.tsv (each
    example's probabilities, tab-separated, no header) and test_predictions.tsv (a header
    `index<TAB>prediction`, then each example's row index and the name in `choice_names` of its
    most probable ending) in `output_dir`. Returns PredictionFiles."""
    files = PredictionFiles(os.path.join(output_dir, RESULTS_FILE), os.path.join(output_dir, SUBMISSION_FILE))
    write_test_results(files.results_file, predictions, len(examples))
    write_submission(files.submission_file, examples, predictions, choice_names, "single")
    return files


def predict(trainer, task: SwagTask, examples):
    """The trained model's choices for the test `examples`, written to the trainer's output_dir
    (`write_predictions`). Every worker predicts; only the chief writes and gets
    PredictionFiles, the others None."""
    predictions = trainer.predict(encode_examples(examples))
    if not trainer.is_chief:
        return None
    return write_predictions(trainer.settings.output_dir, examples, predictions, task.labels)
