"""A SQuAD run's steps without flags: the regrouping of logits rows by example, dev vs test sets,
the output files and the official evaluation, reading a run's inputs (files or TFDS, errors
naming the setting) and predicting then evaluating or not, on tiny files made here."""

import json
import os
import types

import numpy as np
import pytest

from bert_tf.tasks.squad import run as squad_run
from bert_tf.tasks.squad.feature_cache import NoQuestionsError
from tests.tasks.squad.squad_files import LENGTHS, QUERY, SEQ, STRIDE, run_record, window_count, write_squad
from tests.tiny import tiny_config

# ---- Regrouping the logits by example ------------------------------------------------------------


def _row_logits(rows):
    """Row i holds i everywhere: a group's logits tell which rows it got."""
    logits = np.repeat(np.arange(rows, dtype=np.float32)[:, None], SEQ, axis=1)
    return logits, -logits


def test_by_example_groups_rows_in_file_order(tmp_path, tokenizer):
    dev = write_squad(tmp_path / "dev.json")
    windows = [window_count(n) for n in LENGTHS for _ in range(2)]
    start, end = _row_logits(sum(windows))
    groups = list(squad_run.by_example(dev, tokenizer, run_record(), start, end))
    assert [example.qas_id for example, _ in groups] == [f"q{p}-{q}" for p in range(3) for q in range(2)]
    assert [len(group) for _, group in groups] == windows
    rows = [int(s[0]) for _, group in groups for _, s, _ in group]
    assert rows == list(range(sum(windows)))  # row i is feature i, each once
    for index, (_, group) in enumerate(groups):
        assert [f.example_index for f, _, _ in group] == [index] * len(group)
        assert [f.doc_span_index for f, _, _ in group] == list(range(len(group)))
        assert all(np.array_equal(e, -s) for _, s, e in group)


@pytest.mark.parametrize("rows", [-1, 1])
def test_by_example_fails_when_the_file_no_longer_matches_the_logits(tmp_path, tokenizer, rows):
    dev = write_squad(tmp_path / "dev.json")
    start, end = _row_logits(2 * sum(window_count(n) for n in LENGTHS) + rows)
    with pytest.raises(ValueError, match=r"dev.json changed while predicting: .* eval.tf_record"):
        list(squad_run.by_example(dev, tokenizer, run_record(), start, end))


# ---- Dev or test set ------------------------------------------------------------------------------


def test_dev_and_test_sets(tmp_path):
    assert squad_run.has_answers(write_squad(tmp_path / "dev.json"))
    assert squad_run.has_answers(write_squad(tmp_path / "dev2.json", impossible=True))  # is_impossible counts
    assert not squad_run.has_answers(write_squad(tmp_path / "test.json", answers=False))
    empty_lists = json.loads((tmp_path / "test.json").read_text())
    for qa in empty_lists["data"][0]["paragraphs"][0]["qas"]:
        qa["answers"] = []
    (tmp_path / "empty_lists.json").write_text(json.dumps(empty_lists))
    assert not squad_run.has_answers(str(tmp_path / "empty_lists.json"))


def test_a_question_without_answers_in_a_dev_set_is_an_error(tmp_path):
    data = json.loads(open(write_squad(tmp_path / "dev.json")).read())
    del data["data"][0]["paragraphs"][1]["qas"][1]["answers"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    with pytest.raises(ValueError) as error:
        squad_run.has_answers(str(partial))
    assert str(error.value).startswith(f"{partial}: question 'q1-1' has no answers (and is not marked is_impossible)")


def test_a_malformed_file_is_the_readers_error(tmp_path):
    malformed = tmp_path / "malformed.json"
    malformed.write_text(open(write_squad(tmp_path / "dev.json")).read()[:-30])
    with pytest.raises(ValueError, match="malformed.json"):
        squad_run.has_answers(str(malformed))


# ---- Answers, evaluation, the run's files ------------------------------------------------------------


def _cat_logits(dev, tokenizer, record):
    """Logits that point at the cat in every window holding it (else at [CLS])."""
    from bert_tf.tasks.squad import features as squad

    examples = squad.read_squad_examples(dev, False, record.version_2_with_negative)
    features = list(squad.convert_examples_to_features(examples, tokenizer, SEQ, STRIDE, QUERY, False))
    start = np.full((len(features), SEQ), -5.0, np.float32)
    for row, feature in enumerate(features):
        cats = [i for i, t in enumerate(feature.tokens) if t == "cat" and i in feature.token_to_orig_map]
        start[row, cats[0] if cats else 0] = 5.0
    return {"start_logits": start, "end_logits": start.copy()}


@pytest.mark.parametrize("v2", [False, True])
def test_answers_are_written_and_evaluated(tmp_path, tokenizer, v2):
    dev = write_squad(tmp_path / "dev.json", impossible=v2)
    record = run_record(version_2_with_negative=v2)
    out = tmp_path / "out"
    out.mkdir()
    settings = squad_run.AnswerSettings(n_best_size=3, max_answer_length=4)
    answers = squad_run.write_answers(dev, tokenizer, record, settings, _cat_logits(dev, tokenizer, record), str(out))
    ids = [f"q{p}-{q}" for p in range(3) for q in range(2)]
    assert list(answers.predictions) == ids
    assert json.loads((out / "predictions.json").read_text()) == answers.predictions
    assert all(len(entries) <= 3 for entries in json.loads((out / "nbest_predictions.json").read_text()).values())
    if v2:
        assert answers.null_odds_file == str(out / "null_odds.json")
        assert list(json.loads((out / "null_odds.json").read_text())) == ids
    else:
        assert answers.null_odds_file is None and not (out / "null_odds.json").exists()
        assert set(answers.predictions.values()) == {"cat"}

    written = []
    trainer = types.SimpleNamespace(
        settings=types.SimpleNamespace(output_dir=str(out)), global_step=7, write_eval_results=written.append
    )
    results = squad_run.evaluate(trainer, dev, answers)
    assert json.loads((out / "eval_results.json").read_text()) == results
    assert written == [{**results, "global_step": 7}]
    assert ("best_f1_thresh" in results) == v2 and ("exact_match" in results) == (not v2)

    (out / "eval_results.txt").write_text("x")
    squad_run.remove_eval_results(str(out))
    squad_run.remove_eval_results(str(out))  # none left: nothing to do
    assert not (out / "eval_results.json").exists() and not (out / "eval_results.txt").exists()


def test_predict_writes_on_the_chief_only(tmp_path, tokenizer):
    dev = write_squad(tmp_path / "dev.json")
    logits = _cat_logits(dev, tokenizer, run_record())

    def trainer(chief):
        return types.SimpleNamespace(
            predict=lambda records: logits, is_chief=chief, settings=types.SimpleNamespace(output_dir=str(tmp_path))
        )

    settings = squad_run.AnswerSettings()
    assert squad_run.predict(trainer(False), dev, None, tokenizer, run_record(), settings) is None
    assert not (tmp_path / "predictions.json").exists()
    answers = squad_run.predict(trainer(True), dev, None, tokenizer, run_record(), settings)
    assert (tmp_path / "predictions.json").exists() and len(answers.predictions) == 6


# ---- Run record, tokenizer, TFDS file, Task ------------------------------------------------------------


def test_run_record_and_tokenizer(tmp_path, vocab):
    record = run_record(version_2_with_negative=True)
    assert record.kind == "squad" and record.task_name == "squad"
    assert record.to_dict()["version_2_with_negative"] is True and record.to_dict()["doc_stride"] == STRIDE
    assert squad_run.load_tokenizer(vocab, True).vocab["cat"] == 6
    missing = tmp_path / "missing.txt"
    with pytest.raises(ValueError, match=f"^vocab_file={missing}: "):
        squad_run.load_tokenizer(str(missing), True)
    with pytest.raises(ValueError, match=f"^vocab_file={tmp_path}: "):
        squad_run.load_tokenizer(str(tmp_path), True)  # a folder


def test_tfds_split_is_written_beside_the_run(tmp_path, monkeypatch):
    from bert_tf.tasks.squad import tfds

    calls = []
    monkeypatch.setattr(tfds, "write_squad_json", lambda *args: calls.append(args))
    path = tfds.tfds_json_file("squad/v2.0", "validation", str(tmp_path), "data", True)
    assert path == str(tmp_path / "squad_v2.0_validation.json")
    assert calls == [("squad/v2.0", "validation", path, "data", True)]


def test_squad_task_counts_features(tmp_path):
    from bert_tf.tasks.squad.inputs import SquadRecords
    from bert_tf.tasks.squad.task import SquadTask

    task = SquadTask(tiny_config(), max_seq_length=SEQ)
    assert task.num_examples(SquadRecords(str(tmp_path / "f"), 13, SEQ, False)) == 13


# ---- Reading a run's inputs ------------------------------------------------------------------------


def _read(files, out, tokenizer, vocab, do_train=True, do_predict=True, record=None):
    ready = []
    inputs = squad_run.read_inputs(files, do_train, do_predict, tokenizer, vocab, record or run_record(), str(out),
                                   on_features=ready.append)
    return inputs, ready


def test_read_inputs_makes_the_features_of_both_files(tmp_path, vocab, tokenizer):
    train, dev = write_squad(tmp_path / "train.json"), write_squad(tmp_path / "dev.json", lengths=(5, 11))
    out = tmp_path / "out"
    inputs, ready = _read(squad_run.InputFiles(train_file=train, predict_file=dev), out, tokenizer, vocab)
    assert inputs.predict_file == dev and inputs.evaluate  # its questions carry answers: a dev set
    assert inputs.train.examples == 6 and inputs.train.records.path == str(out / "train.tf_record")
    assert inputs.train.records.is_training and inputs.train.records.count == 2 * sum(window_count(n) for n in LENGTHS)
    assert inputs.predict.examples == 4 and inputs.predict.records.path == str(out / "eval.tf_record")
    assert not inputs.predict.records.is_training and inputs.predict.records.count == 2 * (1 + window_count(11))
    assert ready == [inputs.train, inputs.predict]  # each reported as it is ready, train first


def test_read_inputs_reads_only_what_the_run_wants(tmp_path, vocab, tokenizer):
    test_set = write_squad(tmp_path / "test.json", answers=False)
    files = squad_run.InputFiles(train_file=str(tmp_path / "nothing.json"), predict_file=test_set)
    inputs, ready = _read(files, tmp_path / "out", tokenizer, vocab, do_train=False)
    assert inputs.train is None and inputs.predict_file == test_set and not inputs.evaluate  # a test set
    assert ready == [inputs.predict] and inputs.predict.examples == 6
    assert sorted(os.listdir(tmp_path / "out")) == ["eval.tf_record", "eval.tf_record.json"]
    inputs, ready = _read(squad_run.InputFiles(train_file=write_squad(tmp_path / "train.json")), tmp_path / "out2",
                          tokenizer, vocab, do_predict=False)
    assert (inputs.predict_file, inputs.predict, inputs.evaluate) == (None, None, False)
    assert ready == [inputs.train] and inputs.train.examples == 6


def test_read_inputs_takes_tfds_splits_instead_of_the_files(tmp_path, vocab, tokenizer, monkeypatch):
    calls = []

    def tfds_json_file(name, split, output_dir, data_dir, download):
        calls.append((name, split, output_dir, data_dir, download))
        return write_squad(tmp_path / f"{split}.json", answers=split == "train")

    monkeypatch.setattr(squad_run, "tfds_json_file", tfds_json_file)
    files = squad_run.InputFiles("ignored.json", "ignored.json", "squad/v1.1", "tfds_data", True)
    inputs, _ = _read(files, tmp_path / "out", tokenizer, vocab)
    out = str(tmp_path / "out")
    assert calls == [("squad/v1.1", split, out, "tfds_data", True) for split in ("train", "validation")]
    assert inputs.predict_file == str(tmp_path / "validation.json") and not inputs.evaluate
    assert inputs.train.input_file == str(tmp_path / "train.json") and inputs.train.examples == 6


def _partial(tmp_path):
    """A dev set in which one question has no answers: neither dev nor test set."""
    data = json.loads(open(write_squad(tmp_path / "dev.json")).read())
    del data["data"][0]["paragraphs"][1]["qas"][1]["answers"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    return str(partial)


def test_read_inputs_errors_start_with_the_setting_at_fault(tmp_path, vocab, tokenizer, monkeypatch):
    empty, bad = tmp_path / "empty.json", tmp_path / "bad.json"
    empty.write_text(json.dumps({"version": "1.1", "data": []}))
    bad.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [{"qas": []}]}]}))
    train, out = write_squad(tmp_path / "train.json"), tmp_path / "out"
    missing = str(tmp_path / "missing.json")

    def error(files, do_train=True, do_predict=True):
        with pytest.raises(ValueError) as caught:
            _read(files, out, tokenizer, vocab, do_train, do_predict)
        return caught.value

    no_question = error(squad_run.InputFiles(train_file=str(empty)), do_predict=False)
    assert isinstance(no_question, NoQuestionsError)
    assert str(no_question) == f"train_file={empty}: no question to train on"
    assert str(error(squad_run.InputFiles(train, str(empty)))) == f"predict_file={empty}: no question to answer"
    assert str(error(squad_run.InputFiles(str(bad)), do_predict=False)).startswith(f"train_file: {bad}: article 0")
    assert str(error(squad_run.InputFiles(train, missing))) == f"predict_file: SQuAD file {missing} does not exist"
    assert str(error(squad_run.InputFiles(train, _partial(tmp_path)))).startswith(
        f"predict_file: {tmp_path / 'partial.json'}: question 'q1-1' has no answers"
    )

    def unknown(name, split, *args):
        raise ValueError(f"'{name}' is not a SQuAD dataset of TFDS")

    monkeypatch.setattr(squad_run, "tfds_json_file", unknown)
    message = "tfds_name=glue/mrpc: 'glue/mrpc' is not a SQuAD dataset of TFDS"
    assert str(error(squad_run.InputFiles(tfds_name="glue/mrpc"))) == message


def test_a_failed_read_removes_the_folder_it_made_only_while_empty(tmp_path, vocab, tokenizer):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"version": "1.1", "data": []}))
    train = write_squad(tmp_path / "train.json")
    made = tmp_path / "made"
    with pytest.raises(NoQuestionsError):
        _read(squad_run.InputFiles(train_file=str(empty)), made, tokenizer, vocab, do_predict=False)
    assert not made.exists()  # created by the read, left empty: removed
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(NoQuestionsError):
        _read(squad_run.InputFiles(train_file=str(empty)), existing, tokenizer, vocab, do_predict=False)
    assert existing.is_dir() and not os.listdir(existing)  # the user's folder stays
    with pytest.raises(NoQuestionsError):  # the train features were written before the failure: kept
        _read(squad_run.InputFiles(train, str(empty)), made, tokenizer, vocab)
    assert sorted(os.listdir(made)) == ["train.tf_record", "train.tf_record.json"]


# ---- Predicting, then evaluating or not ----------------------------------------------------------------


ANSWERS = squad_run.AnswerSettings()


def _predicting(tmp_path, tokenizer, dev, chief=True, record=None, evaluate=True):
    """A trainer whose model points at the cat, and the inputs of `dev` (evaluate: a dev set)."""
    record = record or run_record()
    logits = _cat_logits(dev, tokenizer, record)
    trainer = types.SimpleNamespace(
        predict=lambda records: logits, is_chief=chief, global_step=3, write_eval_results=lambda results: None,
        settings=types.SimpleNamespace(output_dir=str(tmp_path / "out")),
    )
    return trainer, squad_run.SquadInputs(None, dev, types.SimpleNamespace(records=None), evaluate)


def test_predict_and_evaluate_a_dev_set(tmp_path, tokenizer):
    dev = write_squad(tmp_path / "dev.json")
    trainer, inputs = _predicting(tmp_path, tokenizer, dev)
    (tmp_path / "out").mkdir()
    answers, results = squad_run.predict_and_evaluate(trainer, inputs, tokenizer, run_record(), ANSWERS)
    assert answers.predictions == {f"q{p}-{q}": "cat" for p in range(3) for q in range(2)}
    assert results == {"exact_match": 100.0, "f1": 100.0}
    assert json.loads((tmp_path / "out" / "eval_results.json").read_text()) == results


def test_predict_a_test_set_removes_an_earlier_evaluation(tmp_path, tokenizer):
    out = tmp_path / "out"
    out.mkdir()
    (out / "eval_results.json").write_text("{}")
    (out / "eval_results.txt").write_text("exact_match = 1")
    test_set = write_squad(tmp_path / "test.json", answers=False)
    trainer, inputs = _predicting(tmp_path, tokenizer, test_set, evaluate=False)
    answers, results = squad_run.predict_and_evaluate(trainer, inputs, tokenizer, run_record(), ANSWERS)
    assert results is None and len(answers.predictions) == 6
    assert sorted(os.listdir(out)) == ["nbest_predictions.json", "predictions.json"]


def test_predict_and_evaluate_on_another_worker_writes_nothing(tmp_path, tokenizer):
    out = tmp_path / "out"
    out.mkdir()
    (out / "eval_results.json").write_text("{}")  # the chief's business, not this worker's
    trainer, inputs = _predicting(tmp_path, tokenizer, write_squad(tmp_path / "dev.json"), chief=False, evaluate=False)
    assert squad_run.predict_and_evaluate(trainer, inputs, tokenizer, run_record(), ANSWERS) is None
    assert os.listdir(out) == ["eval_results.json"]


def test_an_evaluation_error_starts_with_the_predict_file(tmp_path, tokenizer):
    """A v1.1 file answered as SQuAD 2.0: null odds the official v1.1 evaluation refuses."""
    dev = write_squad(tmp_path / "dev.json")
    record = run_record(version_2_with_negative=True)
    trainer, inputs = _predicting(tmp_path, tokenizer, dev, record=record)
    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError) as error:
        squad_run.predict_and_evaluate(trainer, inputs, tokenizer, record, ANSWERS)
    assert str(error.value) == f"{dev}: no-answer probabilities apply to SQuAD 2.0 only (the version here is 1.1)"
    assert (tmp_path / "out" / "predictions.json").exists() and not (tmp_path / "out" / "eval_results.json").exists()
