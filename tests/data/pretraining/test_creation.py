"""create_pretraining_data.py's job, called directly: planned (every check before any work), run
on a tiny corpus (outputs renamed together, counts, progress calls, resume) and reported."""

import os

import pytest
import tensorflow as tf
from absl import logging

from bert_tf.data.pretraining import creation
from tests.tiny import write_vocab

# Three documents; word pieces over tests.tiny.VOCAB, lower-cased, counted by hand:
# 7 + 5 (run ##s) + 6, then 5 + 6, then 3 ("unwanted" has no "##ed": one [UNK]; run ##ning).
CORPUS = (
    "The cat sat on the mat.\nA dog runs.\nThe red cat is big.\n\n"
    "The blue dog sat.\nA small cat runs.\n\n"
    "unwanted running\n"
)
# Every document but the last is over 30 bytes: with shards of 30 bytes, one document per shard.
SHARD_SIZE_MB = 30 / (1 << 20)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return str(path)


def _config(tmp_path, **overrides):
    values = dict(max_seq_length=16, max_predictions_per_seq=3, dupe_factor=2, random_seed=7)
    values.update(overrides)
    values.setdefault("vocab_file", write_vocab(tmp_path / "vocab.txt"))
    return creation.PretrainingDataConfig(**values)


def _records(path):
    return [tf.train.Example.FromString(r) for r in tf.data.TFRecordDataset(path).as_numpy_iterator()]


def test_a_job_writes_every_output_together_and_counts_what_it_read(tmp_path, corpus):
    out = tmp_path / "out"
    outputs = [str(out / "a.tfrecord"), str(out / "b.tfrecord")]
    job = creation.plan_job(_config(tmp_path), corpus, outputs, shard_size_mb=SHARD_SIZE_MB)
    assert job.shard_bytes == 30
    calls = []
    summary = creation.run_job(job, on_shard_done=calls.append)

    assert sorted(os.listdir(out)) == ["a.tfrecord", "b.tfrecord"]  # no work folder, no temporary
    s = summary.stats
    assert (s.documents, s.one_sentence_documents, s.sentences) == (3, 1, 6)
    assert (s.corpus_tokens, s.unknown_tokens, s.long_lines, s.invalid_utf8_bytes) == (32, 1, 0, 0)
    assert summary.resumed == 0 and summary.seconds > 0
    # One call per shard, in order, each with its own document's counts; together, the totals.
    assert [(c.documents, c.sentences, c.corpus_tokens) for c in calls] == [(1, 3, 18), (1, 2, 11), (1, 1, 3)]
    assert sum(c.instances for c in calls) == s.instances > 0

    a, b = _records(outputs[0]), _records(outputs[1])
    assert len(a) + len(b) == s.instances and len(b) > 0  # round robin over both files
    for record in a + b:
        features = record.features.feature
        assert len(features["input_ids"].int64_list.value) == 16
        assert len(features["masked_lm_positions"].int64_list.value) == 3
    assert sum(sum(r.features.feature["masked_lm_weights"].float_list.value) for r in a + b) == s.masked_tokens


def test_a_stopped_job_resumes_and_says_so(tmp_path, corpus):
    config = _config(tmp_path)
    straight = [str(tmp_path / "straight" / "x.tfrecord")]
    creation.run_job(creation.plan_job(config, corpus, straight, shard_size_mb=SHARD_SIZE_MB))

    class Stop(Exception):
        pass

    def stop(stats):
        raise Stop

    outputs = [str(tmp_path / "run" / "x.tfrecord")]
    job = creation.plan_job(config, corpus, outputs, shard_size_mb=SHARD_SIZE_MB)
    with pytest.raises(Stop):
        creation.run_job(job, on_shard_done=stop)
    assert not os.path.exists(outputs[0])  # nothing that looks finished
    summary = creation.run_job(job)
    assert 1 <= summary.resumed < 3 and summary.stats.documents == 3  # the resumed shards counted too
    assert summary.report()[0] == (
        logging.INFO, f"Resumed: {summary.resumed} shard(s) were already done by an earlier run"
    )
    with open(straight[0], "rb") as f, open(outputs[0], "rb") as g:
        assert f.read() == g.read()


def test_a_corpus_without_documents_is_an_error_naming_it_and_leaves_nothing(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n")
    job = creation.plan_job(_config(tmp_path), str(empty), [str(tmp_path / "o.tfrecord")])
    with pytest.raises(ValueError, match=f"the input has no documents with any tokens: {empty}"):
        creation.run_job(job)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "vocab.txt"]


def test_plan_job_checks_everything_before_any_work(tmp_path, corpus):
    config = _config(tmp_path)
    other = tmp_path / "corpus2.txt"
    other.write_text("a dog.\n")
    job = creation.plan_job(config, f"{tmp_path}/corpus*.txt", ["o.tfrecord"], num_workers=2)
    assert job.input_files == (corpus, str(other)) and job.output_files == ("o.tfrecord",)
    assert (job.num_workers, job.shard_bytes) == (2, 1 << 20)

    out = str(tmp_path / "o.tfrecord")
    no_mask = write_vocab(tmp_path / "no_mask.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"])
    cases = [
        ((_config(tmp_path, max_seq_length=4), corpus, [out]), ValueError, "max_seq_length 4 is too small"),
        ((config, corpus, [out], 0), ValueError, "num_workers=0 must be at least 1"),
        ((config, corpus, [out], 1, 0.0), ValueError, "shard_size_mb=0.0 must be positive"),
        ((config, f"{tmp_path}/none*.txt", [out]), FileNotFoundError, "none\\*.txt' matches no file"),
        ((_config(tmp_path, vocab_file=no_mask), corpus, [out]), ValueError, "no_mask.txt' lacks \\[MASK\\]"),
        ((config, corpus, []), ValueError, "output_files names no file"),
        ((config, corpus, [str(tmp_path)]), ValueError, f"{tmp_path} is a directory"),
        ((config, corpus, [out, corpus]), ValueError, f"{corpus} is the input file"),
        ((config, corpus, [out, out]), ValueError, "names the same file twice"),
    ]
    for arguments, error, message in cases:
        with pytest.raises(error, match=message):
            creation.plan_job(*arguments)
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "corpus2.txt", "no_mask.txt", "vocab.txt"]


def test_max_predictions_below_the_masking_rate_is_a_warning(tmp_path):
    # round(128 * 0.15) = 19 masked tokens in a full-length sequence.
    assert _config(tmp_path, max_seq_length=128, max_predictions_per_seq=19).warnings() == []
    assert _config(tmp_path, max_seq_length=128, max_predictions_per_seq=18).warnings() == [
        "max_predictions_per_seq=18 is below max_seq_length * masked_lm_prob = 19: full-length sequences will "
        "have fewer than masked_lm_prob of their tokens masked"
    ]


def test_the_report_names_settings_with_the_callers_prefix(tmp_path):
    job = creation.Job(_config(tmp_path), ("in.txt",), ("a.tfrecord", "b.tfrecord"), shard_size_mb=0.5)
    stats = creation.Stats(
        documents=4, one_sentence_documents=1, sentences=9, corpus_tokens=200, unknown_tokens=20, long_lines=2,
        invalid_utf8_bytes=3, cut_documents=1, instances=8, instance_tokens=100, masked_tokens=12, random_next=2,
    )
    info, warning = logging.INFO, logging.WARNING
    assert creation.Summary(job, stats, resumed=2, seconds=4.0).report(prefix="--") == [
        (info, "Resumed: 2 shard(s) were already done by an earlier run"),
        (warning, "Replaced 3 invalid UTF-8 byte(s) in the input"),
        (
            warning,
            "1 document(s) and 0 line(s) were longer than twice --shard_size_mb=0.5 and were cut (each piece is a "
            "document of its own): is the input text, with blank lines between documents?",
        ),
        (warning, "2 line(s) have more than 13 word pieces and were cut to fit; split long lines into sentences"),
        (warning, "10.0% of the word pieces are [UNK]: does --vocab_file/--do_lower_case match the corpus?"),
        (info, "Documents: 4 (1 of one sentence), sentences: 9, corpus word pieces: 200"),
        (info, "Instances: 8 (25.0% random next), tokens: 100, masked tokens: 12; 2 instances/s"),
        (info, "Wrote 2 file(s) in 4.00 s:"),
        (info, "  a.tfrecord"),
        (info, "  b.tfrecord"),
    ]
    # Nothing resumed or wrong (5% [UNK] is not more than 5%); the settings' own names.
    clean = creation.Stats(documents=1, sentences=2, corpus_tokens=40, unknown_tokens=2, instances=3, random_next=3)
    assert creation.Summary(job, clean, resumed=0, seconds=0.5).report()[:2] == [
        (info, "Documents: 1 (0 of one sentence), sentences: 2, corpus word pieces: 40"),
        (info, "Instances: 3 (100.0% random next), tokens: 0, masked tokens: 0; 6 instances/s"),
    ]
    cut = creation.Stats(cut_lines=2)
    assert "longer than twice shard_size_mb=0.5 and" in creation.Summary(job, cut, 0, 1.0).report()[0][1]
