"""An NER run's steps around the one loop (run_ner.py's main, without its flags): reading a
split, the tag set and where it comes from, the run record, the task and its encoded inputs,
evaluation (eval_results.txt) and prediction's files (test_predictions.txt and, for a tagged
test set, test_results.txt)."""

import contextlib
import dataclasses
import os
import typing

import numpy as np

from bert_tf.checkpoints import hf
from bert_tf.data.batching import with_unlabelled
from bert_tf.data.text_files import split_file
from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write
from bert_tf.models.bert_feature_tagger import LSTM_UNITS
from bert_tf.runs import record as run_record
from bert_tf.runs.record import RESUMED_FIELDS, RunRecord
from bert_tf.tasks.ner import conll, conlleval
from bert_tf.tasks.ner.inputs import tags_of
from bert_tf.tasks.ner.task import NerTask

TASK_NAME = "ner"
PREDICTIONS_FILE = "test_predictions.txt"
TEST_RESULTS_FILE = "test_results.txt"
FROM_TRAINING_DATA = "the training data"


def read_split(split, labels=None, data_dir=None, tfds_name=None, tfds_data_dir=None, tfds_download=False):
    """The sentences of a split ("train", "dev" or "test"): its CoNLL file in `data_dir`
    (`conll.SPLIT_FILES`; the test file may be untagged) or, with `tfds_name`, the TFDS split.
    Tags outside `labels` (when given) are errors. FileNotFoundError (`split_file`'s) when
    `data_dir` lacks the file; the readers' ValueError, naming the file and line or the TFDS example, for bad data."""
    if tfds_name:
        return conll.read_tfds_sentences(split, tfds_name, tfds_data_dir, tfds_download, labels)
    path = split_file(data_dir, split, conll.SPLIT_FILES[split])
    return conll.read_conll(path, labels, tagged=split != "test")


class TagSet(typing.NamedTuple):
    labels: list
    source: str  # where they come from, for the log: "the labels file X", "the run in X", ...


def given_tags(labels_file=None, output_dir=None, init_checkpoint=None, tfds_name=None, tfds_data_dir=None):
    """The tag set known before any training data is read, first found of: `labels_file` (one
    tag per line), the NER run in `output_dir` (resuming it keeps its head's tags), the NER run
    `init_checkpoint` is (or is a checkpoint of; or the Hugging Face token classifier folder it is),
    the TFDS dataset's tag names. None when the training data must say (`training_tags`).

    Errors: `labels_file`'s (naming the file and line) when it is given, else an unreadable run
    record's or the TFDS dataset's; nothing else is looked at once `labels_file` is given."""
    if labels_file:
        return TagSet(conll.read_labels_file(labels_file), f"the labels file {labels_file}")
    # init_checkpoint: a run's folder, or one of its checkpoints (OUTPUT_DIR/ckpt-N).
    init = init_checkpoint or ""
    for directory in (output_dir, init if os.path.isdir(init) else os.path.dirname(init)):
        if directory and os.path.isdir(directory):
            record = hf.run_record(directory) if hf.is_hf_folder(directory) else run_record.read(directory)
            if record and record.kind == "ner":
                return TagSet(list(record.labels), f"the run in {directory}")
    if tfds_name:
        return TagSet(conll.tfds_tag_names(tfds_name, tfds_data_dir), f"TFDS dataset {tfds_name}")
    return None


def training_tags(sentences):
    """The tags that occur in the training `sentences`, in the model's class order
    (`conll.label_list`)."""
    return TagSet(conll.label_list(sentences), FROM_TRAINING_DATA)


def ner_record(labels, do_lower_case, max_seq_length, window_context_words, feature_based=None, lstm_units=None,
               group_by_length=False):
    """The run record of an NER run: its tags, what its windows depend on, for the feature-based
    approach the layers its BiLSTM reads and its width (`lstm_units` is kept only with
    `feature_based`), and whether its training batches are grouped by length."""
    return RunRecord(
        kind="ner", task_name=TASK_NAME, label_kind="token", labels=labels, do_lower_case=do_lower_case,
        max_seq_length=max_seq_length, window_context_words=window_context_words, feature_based=feature_based,
        lstm_units=lstm_units if feature_based is not None else None, group_by_length=group_by_length,
    )


def fields_to_match(do_train):
    """The record fields an earlier run in output_dir must share with this one: a run that
    trains resumes that run (the same task, in the same batch order); one that only evaluates or
    predicts needs a model of the same kind with the same tags."""
    return ("task_name", "kind", "labels", *RESUMED_FIELDS) if do_train else ("kind", "labels")


def _model_settings(record):
    if record.feature_based is None:
        return f"{shown.feature_based}=None (fine-tuned)"
    return f"{shown.feature_based}={record.feature_based}, {shown.lstm_units}={record.lstm_units}"


def check_model_settings(record: RunRecord, output_dir, do_train, init_checkpoint=None):
    """The model `record` describes must be the one restored into it: that of an earlier run in
    `output_dir` (resumed, or evaluated) or, for a run that does not train, of the NER run
    `init_checkpoint` is (initialising a training run, any run gives its encoder). A ValueError
    starting with the settings otherwise: a tagger restored into the other model would keep
    an untrained head."""
    places = [output_dir] if do_train else [output_dir, init_checkpoint and run_record.run_directory(init_checkpoint)]
    for directory in places:
        found = run_record.read(directory) if directory and os.path.isdir(directory) else None
        if found is None or found.kind != "ner":
            continue
        if (found.feature_based, found.lstm_units) != (record.feature_based, record.lstm_units):
            raise ValueError(
                f"{_model_settings(record)} is not the model in {directory}, trained with {_model_settings(found)}: "
                "give its settings"
            )
        return


def build_task(bert_config, record: RunRecord, vocab_file, length_bucket=None):
    """The NerTask of `record`'s tags, casing, max_seq_length, window context, model and grouping
    by length, its batches cut to a multiple of `length_bucket` (None: max_seq_length). Its
    tokenizer runs TensorFlow ops: create the distribution strategy first."""
    return NerTask(
        bert_config, list(record.labels), vocab_file=vocab_file, do_lower_case=record.do_lower_case,
        max_seq_length=record.max_seq_length, context_words=record.window_context_words,
        feature_based=record.feature_based, lstm_units=record.lstm_units or LSTM_UNITS,
        length_bucket=length_bucket, group_by_length=record.group_by_length,
    )


def read_transfer(path):
    """The sentences of `path`, a transfer file in the test file's layout (CoNLL, tags optional:
    any there must be well formed, and are not learned from); a ValueError naming the file otherwise."""
    return [dataclasses.replace(s, tags=None) for s in conll.read_conll(path, None, tagged=False)]


def with_transfer(train, transfer):
    """The training windows (`encode_splits`' arrays) with the transfer sentences' windows added,
    their tokens' label weights 0 (the teacher's tag distributions their only targets) and their
    sentence numbers after the training sentences'."""
    unlabelled = dict(transfer)
    unlabelled["label_weights"] = np.zeros_like(transfer["label_weights"])
    unlabelled["sentence"] = transfer["sentence"] + int(train["sentence"].max()) + 1
    return with_unlabelled(train, unlabelled)


def encode_splits(task: NerTask, splits):
    """{split name: sentences} -> {split name: `task.encode`'s window arrays}, empty splits left
    out."""
    return {name: task.encode(sentences) for name, sentences in splits.items() if sentences}


def evaluate(trainer, dev_features):
    """conlleval's figures on the dev set's windows (`encode_splits`), written to
    eval_results.txt in the trainer's output_dir; returns them."""
    results = trainer.evaluate(dev_features)
    trainer.write_eval_results(results)
    return results


@dataclasses.dataclass(frozen=True)
class PredictionFiles:
    """What prediction wrote: the predictions file and, for a tagged test set, conlleval's
    report on it (else None)."""

    predictions_file: str
    report: conlleval.Report | None


def write_test_outputs(output_dir, sentences, predicted, global_step):
    """test_predictions.txt in `output_dir` (`conll.write_predictions`: `word gold predicted`
    per line, a blank line after each sentence) for the test `sentences` and their `predicted`
    tag names. For a tagged test set, also test_results.txt (conlleval's figures, `test_`
    names, as eval_results.txt's); for an untagged one, an earlier test_results.txt is removed,
    as it would describe another test set. Returns PredictionFiles."""
    path = os.path.join(output_dir, PREDICTIONS_FILE)
    conll.write_predictions(path, sentences, predicted)
    results_file = os.path.join(output_dir, TEST_RESULTS_FILE)
    if any(s.tags is None for s in sentences):
        with contextlib.suppress(FileNotFoundError):
            os.remove(results_file)
        return PredictionFiles(path, None)
    report = conlleval.evaluate([s.tags for s in sentences], predicted)
    results = {**report.as_dict("test_"), "global_step": global_step}
    with atomic_write(results_file) as f:
        for key in sorted(results):
            value = results[key]
            f.write(f"{key} = {value if isinstance(value, int) else np.float32(value)}\n")
    return PredictionFiles(path, report)


def predict(trainer, task: NerTask, sentences, features):
    """The trained model's tags for the test `sentences` (their windows in `features`), written
    to the trainer's output_dir (`write_test_outputs`). Every worker predicts; only the chief
    writes and gets PredictionFiles, the others None."""
    outputs = trainer.predict(features)
    if not trainer.is_chief:
        return None
    rows = len(features["sentence"])  # the rest is padding
    ids = tags_of(outputs["predicted"][:rows], features["label_weights"], [len(s.words) for s in sentences])
    return write_test_outputs(trainer.settings.output_dir, sentences, task.tag_names(ids), trainer.global_step)
