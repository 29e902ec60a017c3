"""create_pretraining_data, scaled: sharded, parallel, bounded in memory, resumable.

The corpus (one sentence per line, blank lines between documents) is cut into shards of about
`shard_bytes` that end at document boundaries. Each shard is read, tokenized with TensorFlow ops
(`BertTokenizer`, exactly FullTokenizer's ids) into one flat id array, turned into instances with
the original rules (`pretraining_instances`: segments are ranges of that array, so the
per-instance Python work is a few integer decisions), masked, serialised (`tfrecords`,
TensorFlow's proto encoder) and written to the run's work folder (`work_folder`) as one part
file per output file, under a temporary name, renamed when complete, with a marker holding its
statistics. Two shards are in work at once per process (threads) and `num_workers` processes
share the shards. Once every shard is done, each output file is assembled by interleaving its
parts record by record (as bytes) under a temporary name; the outputs are renamed into place
when all are complete. Every shard has its own seed (from `random_seed` and its index), so the
result does not depend on the number of workers, and a run started again after an interruption
(a kill, a full disk) skips the finished shards and produces the same files.

Differences from the original, all forced by bounded memory: next-sentence B and the final
instance shuffle draw from the shard, not the whole corpus; a document never spans two files; a
document longer than twice the shard size is cut into several (and a line that long into
pieces), so that no shard holds more than `2 * shard_bytes` of text.
"""

import collections
import concurrent.futures
import contextlib
import dataclasses
import gc
import json
import os
import queue
import random
import shutil

import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.data import tfrecords
from bert_tf.data.pretraining import SHARD_WORKER, work_folder
from bert_tf.data.pretraining import instances as instances_lib
from bert_tf.data.pretraining.shards import Shard, plan_shards, read_shard_lines  # noqa: F401 (re-exported)
from bert_tf.data.pretraining.work_folder import work_dir  # noqa: F401 (re-exported)
from bert_tf.data.worker_pool import WorkerPool
from bert_tf.io_utils import atomic_write, check_distinct_outputs
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

    def validate(self):
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length {self.max_seq_length} is too small: [CLS] A [SEP] B [SEP] needs 5")
        if self.max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq {self.max_predictions_per_seq} must be positive")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor {self.dupe_factor} must be positive")
        if not 0 < self.masked_lm_prob < 1:
            raise ValueError(f"masked_lm_prob {self.masked_lm_prob} must be in (0, 1)")
        if not 0 <= self.short_seq_prob <= 1:
            raise ValueError(f"short_seq_prob {self.short_seq_prob} must be in [0, 1]")


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


# ---------------------------------------------------------------------------------------------
# One shard


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
        """Documents -> dict of the TFRecord features' arrays, shuffled, masked."""
        c = self.config
        spans = instances_lib.create_instances(
            documents, c.max_seq_length, c.short_seq_prob, c.dupe_factor, random.Random(seed)
        )
        rng = np.random.default_rng(seed)
        ranges = instances_lib.truncate_pairs(spans, c.max_seq_length - 3, rng)
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
        temporary = [os.path.join(workdir, f".part-{shard.index:06d}-{k:04d}.tmp") for k in range(num_outputs)]
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


# ---------------------------------------------------------------------------------------------
# Worker processes: they and the main process take shards from one shared counter, so the main
# process works from the start while the others are still importing TensorFlow.


def _claimer(shards, counter):
    def next_shard():
        with counter.get_lock():
            index = counter.value
            counter.value += 1
        return shards[index] if index < len(shards) else None

    return next_shard


def freeze_imported_objects():
    """Exempts every object alive now from garbage collection passes. After importing TensorFlow
    there are millions, and each full collection (which the lists built per shard trigger)
    scans them all again: 0.16 s on the first 1 MB shard, against 0.005 s once frozen. For a
    process that imported what it needs and is about to work on shards."""
    gc.freeze()


def _single_threaded_tensorflow():
    """With one process per core, TensorFlow's own thread pools only oversubscribe the cores."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # this process has already run TensorFlow ops
        pass


def work_on_shards(counter, config, shards, num_outputs, workdir, results):
    """A worker process's job: claim shards from `counter` until none are left, reporting each
    one's Stats on `results` (see `worker_pool.WorkerPool`)."""
    freeze_imported_objects()
    _single_threaded_tensorflow()
    try:
        processor = ShardProcessor(config)
        for stats in processor.process_all(_claimer(shards, counter), num_outputs, workdir):
            results.put(("done", dataclasses.asdict(stats)))
    except BaseException:  # report, so the main process can stop with the cause
        import traceback

        results.put(("error", traceback.format_exc()))
    finally:
        results.put(("exit", None))


# ---------------------------------------------------------------------------------------------
# The whole run


# Shards in work at once in a process working alone, one per thread. With worker processes, each
# process (this one too) takes one at a time: with one process per core they have the cores to
# themselves (22 MB, 2 processes on 2 cores: 4.9-5.0 s vs 5.2-5.6 s with two threads here).
_THREADS = 2
# A worker process started here spends ~4 s importing TensorFlow before it helps: one per this
# much input. (A WorkerPool started before the caller's own TensorFlow import has no such cost.)
_BYTES_PER_EXTRA_WORKER = 8 << 20


class WorkerError(RuntimeError):
    """A worker process failed: the message is the last line of its traceback (the error
    itself, e.g. a full disk); `traceback` is all of it."""

    def __init__(self, traceback):
        self.traceback = traceback
        super().__init__(f"a worker process failed: {traceback.strip().splitlines()[-1]}")


def _run_shards(config, shards, num_outputs, workdir, num_workers, total, on_shard_done, pool):
    size = sum(s.end - s.start for s in shards)
    if pool is None:
        extra_workers = max(0, min(num_workers - 1, len(shards) - 1, size // _BYTES_PER_EXTRA_WORKER))
        pool = WorkerPool(extra_workers, SHARD_WORKER)
    pool.submit(config, shards, num_outputs, workdir)
    if len(pool):
        _single_threaded_tensorflow()
    running, errors = len(pool), []

    def report(stats):
        total.add(stats)
        if on_shard_done:
            on_shard_done(stats)

    def drain(block):
        nonlocal running
        while running:
            try:
                kind, payload = pool.results.get(block=block, timeout=1.0 if block else None)
            except queue.Empty:
                if block and not any(p.is_alive() for p in pool.processes):
                    errors.append("a worker process died without a report")
                    running = 0
                if not block:
                    return
                continue
            if kind == "done":
                report(Stats(**payload))
            elif kind == "error":
                errors.append(payload)
            else:
                running -= 1

    try:
        processor = ShardProcessor(config)
        claim = _claimer(shards, pool.counter)
        threads = 1 if len(pool) else _THREADS
        for stats in processor.process_all(claim, num_outputs, workdir, threads=threads):
            report(stats)
            drain(block=False)
            if errors:
                break
        drain(block=True)
    finally:
        pool.close(terminate=bool(errors))
    if errors:
        raise WorkerError(errors[0])


def create_pretraining_data(
    config, files, output_files, num_workers=1, shard_bytes=1 << 20, on_shard_done=None, workers=None
):
    """Runs the whole job; returns (Stats, resumed_shard_count).

    `on_shard_done(stats_of_that_shard)` is called as shards finish (for progress reporting).
    `workers`: a `WorkerPool` started earlier (it is used, then closed) instead of the
    `num_workers - 1` processes this would start, when the input is big enough to repay them.
    """
    config.validate()
    check_distinct_outputs(output_files, [("input_file", f) for f in files] + [("vocab_file", config.vocab_file)])
    shards = plan_shards(files, shard_bytes)
    workdir = work_folder.work_dir(config, files, output_files, shard_bytes)
    work_folder.claim(workdir)
    total, pending = Stats(), []
    for shard in shards:
        marker = work_folder.marker_path(workdir, shard.index)
        if os.path.exists(marker):  # finished by an earlier, interrupted run
            with open(marker, encoding="utf-8") as f:
                done = Stats(**json.load(f))
            total.add(done)
            if on_shard_done:
                on_shard_done(done)
        else:
            pending.append(shard)
    resumed = len(shards) - len(pending)

    if pending:
        _run_shards(config, pending, len(output_files), workdir, num_workers, total, on_shard_done, workers)
    elif workers is not None:
        workers.close()

    if total.documents == 0:
        with contextlib.suppress(OSError):
            shutil.rmtree(workdir)
        raise ValueError(f"the input has no documents with any tokens: {', '.join(files)}")
    # One thread per output file: the byte copies (reads, joins, writes) release the GIL, so two
    # 147 MB outputs take 0.4 s together against 0.47 s for one alone.
    # The outputs are renamed into place only once all are complete: all or none.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(_THREADS, num_workers)) as pool:
        jobs = [
            pool.submit(work_folder.assemble, [work_folder.part_path(workdir, s.index, k) for s in shards], output_file)
            for k, output_file in enumerate(output_files)
        ]
        concurrent.futures.wait(jobs)
    failed = [job.exception() for job in jobs if job.exception() is not None]
    if failed:
        work_folder.remove(job.result() for job in jobs if job.exception() is None)
        raise failed[0]
    for job, output_file in zip(jobs, output_files, strict=True):
        os.replace(job.result(), output_file)
    shutil.rmtree(workdir)
    return total, resumed
