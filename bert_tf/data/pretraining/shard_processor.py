"""One shard of create_pretraining_data: its lines read, tokenized with TensorFlow ops
(`BertTokenizer`, exactly FullTokenizer's ids) into one flat id array, turned into instances with
the original rules (`instances`: segments are ranges of that array, so the per-instance Python
work is a few integer decisions), masked, serialised (`tfrecords`, TensorFlow's proto encoder) and
written to the run's work folder as one part file per output file, under a temporary name,
renamed when complete, with a marker holding its statistics. `creation` runs shards in parallel
and assembles the outputs.
"""

import collections
import concurrent.futures
import dataclasses
import json
import os
import random

import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.data import tfrecords
from bert_tf.data.pretraining import instances as instances_lib
from bert_tf.data.pretraining import work_folder
from bert_tf.data.pretraining.shards import read_shard_lines
from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write, owner_tag
from bert_tf.preprocessing import BertTokenizer

_SERIALIZE_BATCH = 4096
_TOKENIZE_BATCH = 4096


@dataclasses.dataclass(frozen=True)
class PretrainingDataConfig:
    vocab_file: str
    do_lower_case: bool = True
    do_whole_word_mask: bool = False
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    # The paper's ablations (Table 8's split of the chosen tokens; single segments for "No NSP").
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1
    next_sentence: bool = True

    def validate(self):
        if self.next_sentence and self.max_seq_length < 5:
            raise ValueError(f"{shown.max_seq_length} {self.max_seq_length} is too small: [CLS] A [SEP] B [SEP] "
                             f"needs 5")
        if self.max_seq_length < 3:
            raise ValueError(f"{shown.max_seq_length} {self.max_seq_length} is too small: [CLS] A [SEP] needs 3")
        if self.max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq {self.max_predictions_per_seq} must be positive")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor {self.dupe_factor} must be positive")
        if not 0 < self.masked_lm_prob < 1:
            raise ValueError(f"masked_lm_prob {self.masked_lm_prob} must be in (0, 1)")
        if not 0 <= self.short_seq_prob <= 1:
            raise ValueError(f"short_seq_prob {self.short_seq_prob} must be in [0, 1]")
        instances_lib.check_replacement_split(self.mask_token_prob, self.random_token_prob)

    def warnings(self):
        """What works but likely not as meant, one line each, starting with the setting."""
        expected = round(self.max_seq_length * self.masked_lm_prob)
        if self.max_predictions_per_seq >= expected:
            return []
        return [
            f"max_predictions_per_seq={self.max_predictions_per_seq} is below max_seq_length * masked_lm_prob = "
            f"{expected}: full-length sequences will have fewer than masked_lm_prob of their tokens masked"
        ]


@dataclasses.dataclass
class Stats:
    documents: int = 0
    one_sentence_documents: int = 0
    sentences: int = 0
    corpus_tokens: int = 0
    unknown_tokens: int = 0
    long_lines: int = 0  # lines with more word pieces than fit in one instance
    invalid_utf8_bytes: int = 0
    cut_documents: int = 0  # documents cut at a line end to keep a shard under 2 * shard_bytes
    cut_lines: int = 0  # lines cut (at a space, else between characters) for the same reason
    instances: int = 0
    instance_tokens: int = 0
    masked_tokens: int = 0
    random_next: int = 0

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))
        return self


def finished_stats(marker):
    """The Stats in a shard's `marker` file (`work_folder.marker_path`), or None when the shard
    is not finished."""
    try:
        with open(marker, encoding="utf-8") as f:
            return Stats(**json.load(f))
    except FileNotFoundError:
        return None


class ShardProcessor:
    """Turns shards into part files. Built once per worker process (tokenizer tables)."""

    @staticmethod
    def check_vocab(vocab_file):
        """The vocab, after checking it has the tokens pre-training data needs."""
        vocab = tokenization.load_vocab(vocab_file)
        missing = [t for t in ("[UNK]", "[CLS]", "[SEP]", "[MASK]") if t not in vocab]
        if missing:
            raise ValueError(f"vocab file {vocab_file!r} lacks {', '.join(missing)}")
        return vocab

    def __init__(self, config: PretrainingDataConfig):
        config.validate()
        self.config = config
        vocab = self.check_vocab(config.vocab_file)
        self.unk_id = vocab["[UNK]"]
        is_continuation = None
        if config.do_whole_word_mask:
            is_continuation = np.array([t.startswith("##") for t in vocab], dtype=bool)
        self.masking = instances_lib.MaskingConfig(
            cls_id=vocab["[CLS]"],
            sep_id=vocab["[SEP]"],
            mask_id=vocab["[MASK]"],
            vocab_size=len(vocab),
            masked_lm_prob=config.masked_lm_prob,
            max_predictions_per_seq=config.max_predictions_per_seq,
            is_continuation=is_continuation,
            mask_token_prob=config.mask_token_prob,
            random_token_prob=config.random_token_prob,
        )
        # Eagerly: traced graphs (~1 s per process to trace) made whole runs slower, 7.7 s vs
        # 6.2 s at 22 MB and 22.3 s vs 19.8 s at 66 MB, with two shards in threads.
        tokenizer = BertTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
        self._tokenize, self._serialize = tokenizer.call, tfrecords.serialize_examples.python_function

    def documents(self, lines, stats):
        """Lines -> (flat int32 ids, documents as sentence boundaries in them), as the
        original's reader: blank lines end documents, lines that tokenize to nothing are dropped."""
        texts = [line for line in lines if line]
        chunks, ends, offset = [], [], 0
        for i in range(0, len(texts), _TOKENIZE_BATCH):
            ids = self._tokenize(tf.constant(texts[i : i + _TOKENIZE_BATCH]))
            values, splits = ids.flat_values.numpy(), ids.row_splits.numpy()
            chunks.append(values)
            ends.extend((splits[1:] + offset).tolist())
            offset += len(values)
        tokens = np.concatenate(chunks).astype(np.int32) if chunks else np.zeros(0, np.int32)
        documents, current, previous, it = [], [0], 0, iter(ends)
        for line in lines:
            if not line:
                if len(current) > 1:
                    documents.append(current)
                current = [previous]
                continue
            end = next(it)
            if end > previous:
                current.append(end)
            previous = end
        if len(current) > 1:
            documents.append(current)
        lengths = np.diff(np.asarray(ends, np.int64), prepend=0)
        lengths = lengths[lengths > 0]
        stats.unknown_tokens += int(np.sum(tokens == self.unk_id))
        stats.documents += len(documents)
        stats.one_sentence_documents += sum(1 for d in documents if len(d) == 2)
        stats.sentences += len(lengths)
        stats.corpus_tokens += len(tokens)
        stats.long_lines += int(np.sum(lengths > self.config.max_seq_length - 3))
        return tokens, documents

    def instances(self, tokens, documents, seed, stats):
        """Documents -> dict of the TFRecord features' arrays, shuffled, masked. Without
        next-sentence pairs, single segments, still with next_sentence_labels (all 0), so the
        records keep the original's format."""
        c = self.config
        spans = instances_lib.create_instances(
            documents, c.max_seq_length, c.short_seq_prob, c.dupe_factor, random.Random(seed), c.next_sentence
        )
        rng = np.random.default_rng(seed)
        ranges = instances_lib.truncate_pairs(spans, c.max_seq_length - (3 if c.next_sentence else 2), rng)
        if not c.next_sentence:
            ranges = ranges[:, :2]
        input_ids, segment_ids, lengths = instances_lib.pack_instances(
            tokens, ranges, c.max_seq_length, self.masking.cls_id, self.masking.sep_id
        )
        labels = spans[:, 4:5]
        real = np.arange(c.max_seq_length)[None, :] < lengths[:, None]
        masked, positions, label_ids, weights = instances_lib.mask_instances(input_ids, lengths, self.masking, rng)
        stats.instances += len(spans)
        stats.instance_tokens += int(lengths.sum())
        stats.masked_tokens += int(weights.sum())
        stats.random_next += int(labels.sum())
        return {
            "input_ids": masked.astype(np.int64),
            "input_mask": real.astype(np.int64),
            "segment_ids": segment_ids.astype(np.int64),
            "masked_lm_positions": positions.astype(np.int64),
            "masked_lm_ids": label_ids.astype(np.int64),
            "masked_lm_weights": weights,
            "next_sentence_labels": labels,
        }

    def process(self, shard, num_outputs, workdir):
        """Reads, tokenizes, makes and masks the shard's instances, writes its part files (one
        per output, records round robin as the original) and its marker; returns its Stats."""
        stats = Stats(cut_documents=int(shard.cut == "document"), cut_lines=int(shard.cut == "line"))
        lines, stats.invalid_utf8_bytes = read_shard_lines(shard)
        tokens, documents = self.documents(lines, stats)
        seed = int(np.random.SeedSequence([self.config.random_seed, shard.index]).generate_state(1)[0])
        features = self.instances(tokens, documents, seed, stats) if documents else None
        # Named after this process: a cluster runner may run the same shard twice at once (a retry
        # beside a slow first try); each writes its own temporaries and the renames give the same part.
        tag = owner_tag()
        temporary = [os.path.join(workdir, f".part-{shard.index:06d}-{k:04d}.{tag}.tmp") for k in range(num_outputs)]
        try:
            writers = [tf.io.TFRecordWriter(path) for path in temporary]
            try:
                for i in range(0, stats.instances, _SERIALIZE_BATCH):
                    batch = {name: values[i : i + _SERIALIZE_BATCH] for name, values in features.items()}
                    for j, record in enumerate(self._serialize(batch).numpy()):
                        writers[(i + j) % num_outputs].write(record)
            finally:
                for writer in writers:
                    writer.close()
        except BaseException:  # e.g. a full disk: no partial part is left behind
            work_folder.remove(temporary)
            raise
        for k, path in enumerate(temporary):
            os.replace(path, work_folder.part_path(workdir, shard.index, k))
        with atomic_write(work_folder.marker_path(workdir, shard.index), remove_stale=False) as f:
            json.dump(dataclasses.asdict(stats), f)
        return stats

    def process_all(self, next_shard, num_outputs, workdir, threads=1):
        """Processes shards from `next_shard()` (None when there are no more), yielding each
        one's Stats in the order they were claimed. With `threads` > 1, that many shards are in
        work at once, one per thread: tokenization and serialisation are TensorFlow ops that
        release the GIL, so one process keeps two cores busy."""
        if threads <= 1:
            while (shard := next_shard()) is not None:
                yield self.process(shard, num_outputs, workdir)
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
            pending = collections.deque()
            while True:
                while len(pending) < threads and (shard := next_shard()) is not None:
                    pending.append(pool.submit(self.process, shard, num_outputs, workdir))
                if not pending:
                    return
                yield pending.popleft().result()
