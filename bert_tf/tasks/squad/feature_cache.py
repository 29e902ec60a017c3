"""A SQuAD file's features in the run's folder, written once: train.tf_record or eval.tf_record
(the original's names) with `<name>.json` beside it, the fingerprint of what they were made from.
A run started again with the same input and settings reuses them instead of tokenizing the file
again; a changed input file, vocab or setting rewrites them."""

import dataclasses
import hashlib
import json
import os

from bert_tf.io_utils import atomic_write
from bert_tf.runs.record import RunRecord
from bert_tf.tasks.squad import features as squad
from bert_tf.tasks.squad.feature_writer import write_features
from bert_tf.tasks.squad.inputs import SquadRecords

# Bumped when the features written for the same settings change: older files are rewritten.
FEATURES_VERSION = 1
TRAIN_FILE = "train.tf_record"
EVAL_FILE = "eval.tf_record"
TRANSFER_FILE = "transfer.tf_record"  # a teacher's unlabelled questions, in the prediction layout


class NoQuestionsError(ValueError):
    """The input file gave no feature: no question (to train on: none with a usable answer)."""


@dataclasses.dataclass(frozen=True)
class CachedFeatures:
    """The features of `input_file` in `records`; `examples`: how many examples (questions) they
    come from; `stats`: the reader's counts (questions, impossible, skipped_answer_mismatch, ...);
    `reused`: whether they are an earlier run's file."""

    input_file: str
    records: SquadRecords
    examples: int
    stats: dict
    reused: bool

    def summary(self):
        """One line for the log: what was reused, or what the reader found and wrote."""
        if self.reused:
            return f"Reusing {self.records.path}: {self.records.count} features of {self.examples} examples"
        stats, notes = self.stats, ""
        if stats.get("impossible"):
            notes = f" ({stats['impossible']} without an answer)"
        line = f"{self.input_file}: {stats.get('questions', self.examples)} questions{notes} -> "
        line += f"{self.examples} examples, {self.records.count} features"
        if skipped := stats.get("skipped_answer_mismatch", 0):
            line += f"; {skipped} skipped: the answer text is not at its answer_start (as the original)"
        return line


def fingerprint(input_file, is_training, vocab_file, record: RunRecord):
    """What the features written from `input_file` depend on: the file (path, size, mtime), the
    vocab's bytes, the mode and the record's input settings (casing, lengths, stride, v2.0)."""
    stat = os.stat(input_file)
    with open(vocab_file, "rb") as f:
        vocab = hashlib.sha256(f.read()).hexdigest()
    return {
        "features_version": FEATURES_VERSION,
        "input_file": os.path.abspath(input_file),
        "input_size": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "vocab_sha256": vocab,
        "is_training": is_training,
        # The batches' order (group_by_length) is no property of the features.
        **{k: v for k, v in record.to_dict().items() if k not in ("task_name", "kind", "group_by_length")},
    }


class Counted:
    """An iterator that counts what passed through it (`count`)."""

    def __init__(self, iterable):
        self.iterator, self.count = iter(iterable), 0

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self.iterator)
        self.count += 1
        return item


def _reusable(path, meta_path, wanted):
    """The metadata of the features at `path` when they were made from `wanted`, else None."""
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        if meta["fingerprint"] == wanted and os.path.isfile(path):
            return meta
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing, unreadable or from another version: written again
    return None


def cached_features(input_file, is_training, tokenizer, vocab_file, record: RunRecord, output_dir, name=None):
    """`input_file`'s features (`record`'s max_seq_length, doc_stride, max_query_length, casing
    and SQuAD version) in `output_dir`, written now or reused. `tokenizer`: a FullTokenizer of
    `vocab_file`. `name`: the file's name there (default: train.tf_record when `is_training`,
    else eval.tf_record). Returns CachedFeatures.

    Raises the reader's ValueError (naming the file and the question) or FileNotFoundError, and
    NoQuestionsError (its message starts with `input_file`) when there is no feature to write.
    """
    path = os.path.join(output_dir, name or (TRAIN_FILE if is_training else EVAL_FILE))
    meta_path = path + ".json"
    wanted = fingerprint(input_file, is_training, vocab_file, record)
    meta = _reusable(path, meta_path, wanted)
    if meta is not None:
        records = SquadRecords(path, meta["features"], record.max_seq_length, is_training)
        return CachedFeatures(input_file, records, meta["examples"], meta.get("stats", {}), True)
    stats = {}
    examples = Counted(
        squad.read_squad_examples(input_file, is_training, record.version_2_with_negative, stats)
    )
    features = squad.convert_examples_to_features(
        examples, tokenizer, record.max_seq_length, record.doc_stride, record.max_query_length, is_training
    )
    os.makedirs(output_dir, exist_ok=True)
    count = write_features(features, path, is_training)
    if not count:
        os.remove(path)
        raise NoQuestionsError(f"{input_file}: no question to {'train on' if is_training else 'answer'}")
    with atomic_write(meta_path) as f:
        json.dump({"fingerprint": wanted, "features": count, "examples": examples.count, "stats": stats}, f, indent=2)
    records = SquadRecords(path, count, record.max_seq_length, is_training)
    return CachedFeatures(input_file, records, examples.count, stats, False)
