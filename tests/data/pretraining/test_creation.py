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
    job = creation.plan_job(_config(tmp_path), str(empty), [str(tmp_path / "new" / "o.tfrecord")])
    with pytest.raises(
        ValueError, match=f"^no instance was made: --input_file has no documents with any tokens: {empty}$"
    ):
        creation.run_job(job)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "vocab.txt"]  # not even the output's folder


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


# ---------------------------------------------------------------------------------------------
# The paper's ablations: the split of the chosen tokens (Table 8) and single segments (No NSP).

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data")
# sha256 of the files that the code before these options existed (commit 72d3cb4) wrote from
# data/corpus.txt with these settings and the default split: the defaults still write them.
BEFORE_THE_OPTIONS = {
    "plain": (
        dict(random_seed=12345),
        "4efec5715478b142865244aa8600da0b65ee33ac9533108e330beb735d07c35a",
        "8005f3bb5d3ecb7de120daf21028025165aaf8569acb2a3be70a42aa5fd0a8e7",
    ),
    "whole_word": (
        dict(random_seed=7, do_whole_word_mask=True),
        "75b054afbb29858f817c3e40dad5a0857b05cc82bd3bdc4077109bdca6c051b5",
        "2a5124bd6a79fd182e47b0f02fd7998d3d3b76bfc208d20367166b957582d1ba",
    ),
}


@pytest.mark.parametrize("case", sorted(BEFORE_THE_OPTIONS))
def test_the_defaults_write_the_same_bytes_as_before_the_options(tmp_path, case):
    import hashlib

    settings, *expected = BEFORE_THE_OPTIONS[case]
    config = creation.PretrainingDataConfig(
        vocab_file=os.path.join(DATA, "vocab.txt"), max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2,
        **settings,
    )
    outputs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    creation.create_pretraining_data(config, [os.path.join(DATA, "corpus.txt")], outputs, shard_bytes=4000)
    assert [hashlib.sha256(open(path, "rb").read()).hexdigest() for path in outputs] == expected


def _features(path):
    return [{k: list(v.int64_list.value or v.float_list.value) for k, v in r.features.feature.items()}
            for r in _records(path)]


def test_other_splits_change_only_what_the_chosen_tokens_become(tmp_path, corpus):
    written = {}
    for split in ((0.8, 0.1), (0.0, 0.0), (1.0, 0.0)):
        out = str(tmp_path / f"{split}.tfrecord")
        config = _config(tmp_path, mask_token_prob=split[0], random_token_prob=split[1])
        creation.run_job(creation.plan_job(config, corpus, [out]))
        written[split] = _features(out)
    default, keep, mask = written[(0.8, 0.1)], written[(0.0, 0.0)], written[(1.0, 0.0)]
    assert len(default) == len(keep) == len(mask) > 0
    for d, k, m in zip(default, keep, mask, strict=True):
        for name in d:
            if name != "input_ids":  # the same instances, positions and labels
                assert d[name] == k[name] == m[name], name
        chosen = [p for p, w in zip(d["masked_lm_positions"], d["masked_lm_weights"], strict=True) if w]
        unmasked = list(d["input_ids"])
        for p, label in zip(chosen, d["masked_lm_ids"], strict=False):
            unmasked[p] = label
        assert k["input_ids"] == unmasked  # every chosen token kept
        assert m["input_ids"] == [4 if p in chosen else t for p, t in enumerate(unmasked)]  # all [MASK]


def test_without_next_sentence_each_instance_is_one_run_of_a_document(tmp_path, corpus):
    from bert_tf.tokenization import FullTokenizer

    # Room for each whole document (18, 11 and 3 pieces) and no short targets: one instance each.
    config = _config(
        tmp_path, max_seq_length=24, max_predictions_per_seq=4, dupe_factor=1, short_seq_prob=0.0, next_sentence=False
    )
    out = str(tmp_path / "o.tfrecord")
    summary = creation.run_job(creation.plan_job(config, corpus, [out]))
    tokenizer = FullTokenizer(config.vocab_file)
    documents = [
        [i for line in text.strip().splitlines() for i in tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))]
        for text in CORPUS.split("\n\n")
    ]
    rows = []
    for f in _features(out):
        n = sum(f["input_mask"])
        ids = list(f["input_ids"])
        for p, label, w in zip(f["masked_lm_positions"], f["masked_lm_ids"], f["masked_lm_weights"], strict=True):
            if w:
                ids[p] = label
        assert ids[0] == 2 and ids[n - 1] == 3 and not {2, 3} & set(ids[1 : n - 1])  # [CLS] A [SEP]
        assert not any(f["segment_ids"]) and f["next_sentence_labels"] == [0]
        rows.append(ids[1 : n - 1])
    assert sorted(rows) == sorted(documents) and summary.stats.random_next == 0


def test_a_bad_split_fails_before_any_work(tmp_path, corpus):
    out = str(tmp_path / "o.tfrecord")
    for split, message in (
        ((0.9, 0.2), r"mask_token_prob=0.9 \+ random_token_prob=0.2 = 1.1 is above 1"),
        ((0.8, -0.1), r"random_token_prob=-0.1 must be in \[0, 1\]"),
    ):
        with pytest.raises(ValueError, match=message):
            creation.plan_job(_config(tmp_path, mask_token_prob=split[0], random_token_prob=split[1]), corpus, [out])
    with pytest.raises(ValueError, match=r"max_seq_length 2 is too small: \[CLS\] A \[SEP\] needs 3"):
        creation.plan_job(_config(tmp_path, max_seq_length=2, next_sentence=False), corpus, [out])
    creation.plan_job(_config(tmp_path, max_seq_length=4, next_sentence=False), corpus, [out])  # 4 < 5 is fine
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "vocab.txt"]
