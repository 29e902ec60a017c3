"""The SQuAD feature cache: features written once and reused while input and settings are the
same, rewritten when one changes; its errors and log line."""

import dataclasses
import json
import os
import types

import pytest

from bert_tf.tasks.squad import feature_cache
from bert_tf.tasks.squad.feature_cache import NoQuestionsError, cached_features
from tests.tasks.squad.squad_files import LENGTHS, QUERY, SEQ, VOCAB, run_record, window_count, write_squad
from tests.tiny import write_vocab


def test_features_are_written_once_and_reused_while_nothing_changes(tmp_path, vocab, tokenizer):
    train = write_squad(tmp_path / "train.json")
    out = str(tmp_path / "out")
    first = cached_features(train, True, tokenizer, vocab, run_record(), out)
    assert not first.reused and first.examples == 6
    assert first.records.path == os.path.join(out, "train.tf_record") and first.records.is_training
    assert first.records.count == 2 * sum(window_count(n) for n in LENGTHS)
    assert first.stats["questions"] == 6
    meta = json.loads(open(first.records.path + ".json").read())
    assert meta["features"] == first.records.count and meta["examples"] == 6
    assert meta["fingerprint"]["max_seq_length"] == SEQ and meta["fingerprint"]["is_training"] is True
    assert "kind" not in meta["fingerprint"] and "task_name" not in meta["fingerprint"]
    assert first.summary() == f"{train}: 6 questions -> 6 examples, {first.records.count} features"

    written = os.stat(first.records.path).st_mtime_ns
    again = cached_features(train, True, tokenizer, vocab, run_record(), out)
    assert again.reused and again.records == first.records and again.examples == 6
    assert os.stat(first.records.path).st_mtime_ns == written  # not written again
    assert again.summary() == f"Reusing {first.records.path}: {first.records.count} features of 6 examples"
    # Another run of the same settings, named otherwise, reuses them too: the name is not an input.
    renamed = dataclasses.replace(run_record(), task_name="squad-again")
    assert cached_features(train, True, tokenizer, vocab, renamed, out).reused
    # Prediction features are another file.
    evaluation = cached_features(train, False, tokenizer, vocab, run_record(), out)
    assert not evaluation.reused and evaluation.records.path == os.path.join(out, "eval.tf_record")


@pytest.mark.parametrize(
    "change",
    ["doc_stride", "max_query_length", "max_seq_length", "do_lower_case", "input", "vocab", "version", "meta"],
)
def test_features_are_rewritten_when_an_input_or_setting_changes(tmp_path, vocab, tokenizer, monkeypatch, change):
    train = write_squad(tmp_path / "train.json")
    out = str(tmp_path / "out")
    first = cached_features(train, True, tokenizer, vocab, run_record(), out)
    record = run_record()
    if change == "doc_stride":
        record = run_record(doc_stride=1)
    elif change == "max_query_length":
        record = run_record(max_query_length=QUERY + 1)
    elif change == "max_seq_length":
        record = run_record(max_seq_length=SEQ + 4)
    elif change == "do_lower_case":
        record = run_record(do_lower_case=False)
    elif change == "input":
        write_squad(tmp_path / "train.json", lengths=(5, 11))
    elif change == "vocab":
        write_vocab(vocab, VOCAB + ["mats"])
    elif change == "version":
        monkeypatch.setattr(feature_cache, "FEATURES_VERSION", feature_cache.FEATURES_VERSION + 1)
    elif change == "meta":
        (tmp_path / "out" / "train.tf_record.json").write_text("{not json")
    again = cached_features(train, True, tokenizer, vocab, record, out)
    assert not again.reused
    assert again.records.seq_length == record.max_seq_length
    if change == "input":
        assert again.examples == 4 and again.records.count < first.records.count
    elif change in ("doc_stride", "max_seq_length"):
        windows = sum(window_count(n, record.max_seq_length, record.doc_stride) for n in LENGTHS)
        assert again.records.count == 2 * windows != first.records.count
    assert cached_features(train, True, tokenizer, vocab, record, out).reused  # and now kept


def test_a_lost_tf_record_is_written_again(tmp_path, vocab, tokenizer):
    train = write_squad(tmp_path / "train.json")
    out = str(tmp_path / "out")
    first = cached_features(train, True, tokenizer, vocab, run_record(), out)
    os.remove(first.records.path)
    again = cached_features(train, True, tokenizer, vocab, run_record(), out)
    assert not again.reused and os.path.isfile(again.records.path) and again.records == first.records


def test_no_question_is_an_error_naming_the_file_and_leaves_no_file(tmp_path, vocab, tokenizer):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"version": "1.1", "data": []}))
    out = tmp_path / "out"
    with pytest.raises(NoQuestionsError) as error:
        cached_features(str(empty), True, tokenizer, vocab, run_record(), str(out))
    assert str(error.value) == f"{empty}: no question to train on"
    with pytest.raises(NoQuestionsError, match="no question to answer"):
        cached_features(str(empty), False, tokenizer, vocab, run_record(), str(out))
    assert os.listdir(out) == []


def test_a_bad_file_is_the_readers_error(tmp_path, vocab, tokenizer):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [{"qas": []}]}]}))
    with pytest.raises(ValueError, match="bad.json.*'context'"):
        cached_features(str(bad), True, tokenizer, vocab, run_record(), str(tmp_path / "out"))


def test_summary_names_skipped_and_impossible_questions():
    records = types.SimpleNamespace(path="f", count=7)
    stats = {"questions": 5, "impossible": 2, "skipped_answer_mismatch": 1}
    line = feature_cache.CachedFeatures("in.json", records, 4, stats, False).summary()
    assert line == (
        "in.json: 5 questions (2 without an answer) -> 4 examples, 7 features; 1 skipped: the answer text is not "
        "at its answer_start (as the original)"
    )


def test_counted_counts_what_passed():
    counted = feature_cache.Counted(iter("abc"))
    assert next(counted) == "a" and counted.count == 1
    assert list(counted) == ["b", "c"] and counted.count == 3
