"""A SQuAD run's steps around the one loop (the original run_squad.py's main, without its flags):
the run record, the tokenizer, the inputs (files or TFDS, dev or test set, their features),
prediction and its output files (predictions.json, nbest_predictions.json, null_odds.json), the
official evaluation (eval_results.json and .txt).

The features to predict are not held in memory: the logits of row i belong to feature i of
eval.tf_record, and post-processing rebuilds the features from the input file in the same order
(`by_example`)."""

import contextlib
import dataclasses
import itertools
import json
import os

from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write
from bert_tf.runs.record import RESUMED_FIELDS, RunRecord
from bert_tf.tasks.squad import features as squad
from bert_tf.tasks.squad import metrics as squad_metrics
from bert_tf.tasks.squad.feature_cache import TRANSFER_FILE, CachedFeatures, NoQuestionsError, cached_features
from bert_tf.tasks.squad.json_reader import iter_squad_articles
from bert_tf.tasks.squad.predictions import write_predictions
from bert_tf.tasks.squad.task import SquadTask
from bert_tf.tasks.squad.tfds import tfds_json_file
from bert_tf.tokenization import FullTokenizer

PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"
EVAL_RESULTS_FILES = ("eval_results.json", "eval_results.txt")


def squad_record(version_2_with_negative, do_lower_case, max_seq_length, doc_stride, max_query_length,
                 group_by_length=False):
    """The run record of a SQuAD run: what its features and a later export depend on, and whether
    its training batches are grouped by length."""
    return RunRecord(
        kind="squad", task_name="squad", version_2_with_negative=version_2_with_negative,
        do_lower_case=do_lower_case, max_seq_length=max_seq_length, doc_stride=doc_stride,
        max_query_length=max_query_length, group_by_length=group_by_length,
    )


def fields_to_match(do_train):
    """The record fields an earlier run in output_dir must share with this one: the same task and
    SQuAD version and, for a run that trains (resumes it), the same batch order."""
    return ("task_name", "version_2_with_negative") + (RESUMED_FIELDS if do_train else ())


def build_task(bert_config, record: RunRecord, length_bucket=None):
    """The SquadTask of `record`'s max_seq_length and grouping by length, its batches cut to a
    multiple of `length_bucket` (None: max_seq_length)."""
    return SquadTask(bert_config, record.max_seq_length, length_bucket, record.group_by_length)


def load_tokenizer(vocab_file, do_lower_case):
    """The FullTokenizer of `vocab_file`; a ValueError starting `vocab_file=...` when the file
    cannot be read or is no vocab (check it against the model with `BertConfig.check_vocab_size`)."""
    try:
        return FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    except (OSError, ValueError) as e:
        raise ValueError(f"{shown.vocab_file}={vocab_file}: {e}") from None


def has_answers(input_file):
    """Whether the SQuAD file at `input_file` is a dev set (its questions carry answers or are
    marked is_impossible) rather than a test set (no question does, or their answer lists are
    empty). A ValueError naming the file and the question when some questions have answers and
    another has none; the reader's ValueError for a malformed file."""
    with_answers, without = 0, None
    for qa in _questions(input_file):
        if qa.get("answers") or qa.get("is_impossible"):
            with_answers += 1
        elif without is None:
            without = qa.get("id")
        if with_answers and without is not None:
            raise ValueError(
                f"{input_file}: question {without!r} has no answers (and is not marked "
                "is_impossible) while other questions have answers: a dev set needs them on every question"
            )
    return with_answers > 0


def _questions(input_file):
    """Yields the questions (qa dicts) of the SQuAD file at `input_file`, in order; what is not a
    dict where one belongs is passed over (the reader names what is wrong)."""
    for article in iter_squad_articles(input_file):
        for paragraph in article.get("paragraphs", ()) if isinstance(article, dict) else ():
            for qa in paragraph.get("qas", ()) if isinstance(paragraph, dict) else ():
                if isinstance(qa, dict):
                    yield qa


def check_questions(input_file):
    """A NoQuestionsError (naming `input_file`) unless the SQuAD file holds a question; the
    reader's ValueError for a file that is not SQuAD json. Its answers are not looked at."""
    if next(_questions(input_file), None) is None:
        raise NoQuestionsError(f"{input_file}: no question to answer")


@dataclasses.dataclass(frozen=True)
class InputFiles:
    """Where a run's questions come from: the SQuAD json files `train_file` and `predict_file`,
    or, with `tfds_name` (squad/v1.1 or squad/v2.0), TFDS's train and validation splits (from
    `tfds_data_dir`, TFDS's own when None; `tfds_download`: prepare them when missing), written as
    SQuAD json in the run's folder."""

    train_file: str | None = None
    predict_file: str | None = None
    tfds_name: str | None = None
    tfds_data_dir: str | None = None
    tfds_download: bool = False
    transfer_file: str | None = None  # unlabelled questions (a prediction file), trained on with a teacher


@dataclasses.dataclass(frozen=True)
class SquadInputs:
    """A run's inputs, read and turned into features: `train` and `predict` (CachedFeatures;
    None when not wanted), `predict_file` (the SQuAD json answered: a TFDS split's copy too) and
    `evaluate` (whether it is a dev set, its questions carrying answers), `transfer` (the
    unlabelled questions of `transfer_file`, when training with one)."""

    train: CachedFeatures | None
    predict_file: str | None
    predict: CachedFeatures | None
    evaluate: bool
    transfer: CachedFeatures | None = None  # its records follow train's in training (`SquadRecords.transfer`)


def _prefixed(prefix, work):
    """`work()`, a ValueError or FileNotFoundError raised again as a ValueError starting `prefix`."""
    try:
        return work()
    except (ValueError, FileNotFoundError) as e:
        raise ValueError(f"{prefix}{e}") from e


def _input_file(files: InputFiles, split, path, output_dir):
    if not files.tfds_name:
        return path
    return _prefixed(
        f"tfds_name={files.tfds_name}: ",
        lambda: tfds_json_file(files.tfds_name, split, output_dir, files.tfds_data_dir, files.tfds_download),
    )


def _features(setting, input_file, is_training, tokenizer, vocab_file, record, output_dir, name=None):
    try:
        return cached_features(input_file, is_training, tokenizer, vocab_file, record, output_dir, name)
    except NoQuestionsError as e:
        raise NoQuestionsError(f"{shown(setting)}={e}") from e  # the message starts with the file
    except (ValueError, FileNotFoundError) as e:
        raise ValueError(f"{shown(setting)}: {e}") from e


def read_inputs(files: InputFiles, do_train, do_predict, tokenizer, vocab_file, record: RunRecord, output_dir,
                on_features=None):
    """Every input the run wants (`do_train`, `do_predict`) read, checked and turned into
    features in `output_dir` (`cached_features`; `tokenizer`: a FullTokenizer of `vocab_file`)
    before any training: the files (TFDS splits written first), whether the predict file is a dev
    set (`has_answers`), the train features, the predict features. `on_features(CachedFeatures)`
    (optional) is called as each is ready. Returns SquadInputs.

    Errors are ValueErrors starting with the setting at fault: `tfds_name=<name>: `,
    `predict_file: ` (dev or test set), `train_file: ` or `predict_file: ` (the reader's error),
    `train_file=<file>: no question ...` (NoQuestionsError). A failed start removes the
    `output_dir` it created when it is still empty."""
    created = not os.path.exists(output_dir)
    try:
        train_file = _input_file(files, "train", files.train_file, output_dir) if do_train else None
        predict_file = _input_file(files, "validation", files.predict_file, output_dir) if do_predict else None
        evaluate = bool(do_predict) and _prefixed("predict_file: ", lambda: has_answers(predict_file))
        if do_train and files.transfer_file:  # its layout checked before any features are written
            _prefixed("transfer_file: ", lambda: check_questions(files.transfer_file))

        def features(setting, path, is_training, name=None):
            cached = _features(setting, path, is_training, tokenizer, vocab_file, record, output_dir, name)
            if on_features is not None:
                on_features(cached)
            return cached

        train = features("train_file", train_file, True) if do_train else None
        transfer = None
        if do_train and files.transfer_file:  # questions in the prediction layout: answers are not read
            transfer = features("transfer_file", files.transfer_file, False, TRANSFER_FILE)
            records = dataclasses.replace(train.records, transfer=transfer.records)
            train = dataclasses.replace(train, records=records)
        predict = features("predict_file", predict_file, False) if do_predict else None
    except BaseException:
        if created and os.path.isdir(output_dir) and not os.listdir(output_dir):
            os.rmdir(output_dir)
        raise
    return SquadInputs(train, predict_file, predict, evaluate, transfer)


def by_example(input_file, tokenizer, record: RunRecord, start_logits, end_logits):
    """Yields `(example, [(feature, start_logits, end_logits), ...])` in file order, the features
    rebuilt from `input_file` as they were written to eval.tf_record (`record`'s settings; row i
    of the float `[features, max_seq_length]` logits is feature i): nothing but the logits is held
    in memory. A ValueError (starting with `input_file`) when the file no longer gives as many
    features as there are rows."""
    examples, again = itertools.tee(squad.read_squad_examples(input_file, False, record.version_2_with_negative))
    features = squad.convert_examples_to_features(
        again, tokenizer, record.max_seq_length, record.doc_stride, record.max_query_length, False
    )
    index, example, group, row = -1, None, [], -1
    for row, feature in enumerate(features):
        if row >= len(start_logits):
            break
        if feature.example_index != index:
            if group:
                yield example, group
            while index < feature.example_index:
                example, index = next(examples), index + 1
            group = []
        group.append((feature, start_logits[row], end_logits[row]))
    if row + 1 != len(start_logits):
        raise ValueError(f"{input_file} changed while predicting: its features no longer match eval.tf_record")
    if group:
        yield example, group


@dataclasses.dataclass(frozen=True)
class AnswerSettings:
    """How answers are picked from the logits (the original's flags of the same names)."""

    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0  # v2.0: predict "" when null score - best span's > this


@dataclasses.dataclass(frozen=True)
class Answers:
    """What `write_answers` wrote: the predictions ({question id: text}, file order) and, for
    v2.0, the path of null_odds.json (else None)."""

    predictions: dict
    null_odds_file: str | None


def write_answers(input_file, tokenizer, record: RunRecord, answers: AnswerSettings, logits, output_dir):
    """Post-processes `logits` ({"start_logits", "end_logits"}: float `[features, seq]`, one row
    per feature of eval.tf_record) into predictions.json, nbest_predictions.json and, for v2.0,
    null_odds.json in `output_dir`. Returns Answers."""
    null_odds = os.path.join(output_dir, NULL_ODDS_FILE)
    predictions = write_predictions(
        by_example(input_file, tokenizer, record, logits["start_logits"], logits["end_logits"]),
        os.path.join(output_dir, PREDICTIONS_FILE),
        os.path.join(output_dir, NBEST_FILE),
        null_odds,
        answers.n_best_size,
        answers.max_answer_length,
        record.do_lower_case,
        record.version_2_with_negative,
        answers.null_score_diff_threshold,
    )
    return Answers(predictions, null_odds if record.version_2_with_negative else None)


def predict(trainer, input_file, records, tokenizer, record: RunRecord, answers: AnswerSettings):
    """The trained model's answers to the questions of `input_file` (its features in `records`,
    a SquadRecords), written to the trainer's output_dir (`write_answers`). Every worker predicts;
    only the chief writes and gets Answers, the others None."""
    logits = trainer.predict(records)
    if not trainer.is_chief:
        return None
    return write_answers(input_file, tokenizer, record, answers, logits, trainer.settings.output_dir)


def evaluate(trainer, input_file, answers: Answers):
    """The official evaluation of `answers` against the dev set `input_file` (v2.0 with the null
    odds): eval_results.json (the official script's JSON) and eval_results.txt with global_step
    in the trainer's output_dir. Returns the official results; a ValueError starting with
    `input_file` when it cannot be evaluated."""
    na_probs = None
    if answers.null_odds_file:
        with open(answers.null_odds_file, encoding="utf-8") as f:
            na_probs = json.load(f)
    results = _prefixed(
        f"{input_file}: ", lambda: squad_metrics.evaluate(input_file, answers.predictions, na_probs=na_probs)
    )
    with atomic_write(os.path.join(trainer.settings.output_dir, EVAL_RESULTS_FILES[0])) as f:
        f.write(json.dumps(results) + "\n")
    trainer.write_eval_results({**results, "global_step": trainer.global_step})
    return results


def remove_eval_results(output_dir):
    """Removes eval_results.json/.txt from `output_dir`: after a test set's predictions, a dev
    set's figures must not stay beside them."""
    for name in EVAL_RESULTS_FILES:
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(output_dir, name))


def predict_and_evaluate(trainer, inputs: SquadInputs, tokenizer, record: RunRecord, answers: AnswerSettings):
    """The trained model's answers to `inputs.predict_file` (`predict`), then, on the chief, the
    official evaluation of a dev set (`evaluate`), or for a test set the removal of an earlier
    run's eval_results (`remove_eval_results`: another file's figures). Returns
    `(Answers, results)`, results None for a test set; None on the other workers.

    Errors are ValueErrors starting with a file: the predict file (changed while predicting, or
    what the evaluation finds wrong in it) or the features' TFRecord file."""
    written = predict(trainer, inputs.predict_file, inputs.predict.records, tokenizer, record, answers)
    if written is None:
        return None
    if not inputs.evaluate:
        remove_eval_results(trainer.settings.output_dir)
        return written, None
    return written, evaluate(trainer, inputs.predict_file, written)
