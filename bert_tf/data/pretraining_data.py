"""create_pretraining_data, scaled: sharded, parallel, bounded in memory, resumable.

The corpus (one sentence per line, blank lines between documents) is cut into shards of about
`shard_bytes` that end at document boundaries. Each shard is read, tokenized in graph
(`BertTokenizer`, exactly FullTokenizer's ids), turned into instances with the original rules
(`pretraining_instances`), masked, serialised and written as one part file per output file,
under a temporary name, renamed when complete, with a marker holding its statistics. Once every
shard is done, each output file is assembled by interleaving its parts record by record, written
under a temporary name and renamed. Every shard has its own seed (from `random_seed` and its
index), so the result does not depend on the number of workers, and a run started again after an
interruption skips the finished shards and produces the same files.

Differences from the original, all forced by bounded memory: next-sentence B and the final
instance shuffle draw from the shard, not the whole corpus; a document never spans two files.
"""

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import multiprocessing
import os
import queue
import random
import shutil

import numpy as np
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.data import pretraining_instances as instances_lib
from bert_tf.data import tfrecords
from bert_tf.data.shards import Shard, plan_shards, read_shard_lines  # noqa: F401 (re-exported)
from bert_tf.io_utils import atomic_write

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

    def __init__(self, config: PretrainingDataConfig, compiled=True):
        """`compiled`: run tokenization and serialisation as traced graphs (faster per MB, ~1 s to
        trace); eager is quicker overall for a few MB of input."""
        from bert_tf.preprocessing import BertTokenizer  # TensorFlow Text, only where needed

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
        tokenizer = BertTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
        self._tokenize, self._serialize = tokenizer.call, tfrecords.serialize_examples.python_function
        if compiled:
            self._tokenize = tf.function(
                tokenizer.call, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
            )
            self._serialize = tfrecords.serialize_examples

    def documents(self, lines, stats):
        """Lines -> documents (lists of int32 id arrays), as the original's reader."""
        texts = [line for line in lines if line]
        pieces = []
        for i in range(0, len(texts), _TOKENIZE_BATCH):
            ids = self._tokenize(tf.constant(texts[i : i + _TOKENIZE_BATCH]))
            values, splits = ids.flat_values.numpy(), ids.row_splits.numpy()
            stats.unknown_tokens += int(np.sum(values == self.unk_id))
            pieces.extend(np.split(values, splits[1:-1]) if len(splits) > 1 else [])
        documents, current, it = [], [], iter(pieces)
        for line in lines:
            if not line:  # blank lines separate documents
                documents.append(current)
                current = []
                continue
            sentence = next(it)
            if len(sentence):  # lines that tokenize to nothing are dropped, as the original
                current.append(sentence)
        documents.append(current)
        documents = [d for d in documents if d]
        lengths = np.array([len(s) for d in documents for s in d], dtype=np.int64)
        stats.documents += len(documents)
        stats.one_sentence_documents += sum(1 for d in documents if len(d) == 1)
        stats.sentences += len(lengths)
        stats.corpus_tokens += int(lengths.sum())
        stats.long_lines += int(np.sum(lengths > self.config.max_seq_length - 3))
        return documents

    def instances(self, documents, seed, stats):
        """Documents -> dict of the TFRecord features' arrays, shuffled, masked."""
        c = self.config
        rng = random.Random(seed)
        made = instances_lib.create_instances(documents, c.max_seq_length, c.short_seq_prob, c.dupe_factor, rng)
        n = len(made)
        input_ids, segment_ids, lengths, labels = instances_lib.pack_instances(
            made, c.max_seq_length, self.masking.cls_id, self.masking.sep_id
        )
        real = np.arange(c.max_seq_length)[None, :] < lengths[:, None]
        masked, positions, label_ids, weights = instances_lib.mask_instances(
            input_ids, lengths, self.masking, np.random.default_rng(seed)
        )
        stats.instances += n
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

    def prepare(self, shard):
        """Read and tokenize (mostly TensorFlow work, which releases the GIL)."""
        stats = Stats()
        lines, stats.invalid_utf8_bytes = read_shard_lines(shard)
        return shard, self.documents(lines, stats), stats

    def finish(self, prepared, num_outputs, workdir):
        """Instances, masking, serialisation; writes the part files and the marker."""
        shard, documents, stats = prepared
        seed = int(np.random.SeedSequence([self.config.random_seed, shard.index]).generate_state(1)[0])
        features = self.instances(documents, seed, stats) if documents else None
        temporary = [os.path.join(workdir, f".part-{shard.index:06d}-{k:04d}.tmp") for k in range(num_outputs)]
        writers = [tf.io.TFRecordWriter(path) for path in temporary]
        try:
            for i in range(0, stats.instances, _SERIALIZE_BATCH):
                batch = {name: values[i : i + _SERIALIZE_BATCH] for name, values in features.items()}
                for j, record in enumerate(self._serialize(batch).numpy()):
                    writers[(i + j) % num_outputs].write(record)  # round robin, as the original
        finally:
            for writer in writers:
                writer.close()
        for k, path in enumerate(temporary):
            os.replace(path, _part_path(workdir, shard.index, k))
        with atomic_write(_marker_path(workdir, shard.index)) as f:
            json.dump(dataclasses.asdict(stats), f)
        return stats

    def process(self, shard, num_outputs, workdir):
        """Writes the shard's part files (one per output) and its marker; returns its Stats."""
        return self.finish(self.prepare(shard), num_outputs, workdir)

    def process_all(self, next_shard, num_outputs, workdir, prefetch=True):
        """Processes shards from `next_shard()` (None when there are no more), yielding each
        one's Stats; with `prefetch`, the next shard is read and tokenized in a thread meanwhile
        (worth it when this is the only process: TensorFlow work releases the GIL)."""
        if not prefetch:
            while (shard := next_shard()) is not None:
                yield self.process(shard, num_outputs, workdir)
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as reader:

            def ahead():
                shard = next_shard()
                return reader.submit(self.prepare, shard) if shard is not None else None

            pending = ahead()
            while pending is not None:
                prepared = pending.result()
                pending = ahead()
                yield self.finish(prepared, num_outputs, workdir)


def _part_path(workdir, shard_index, output_index):
    return os.path.join(workdir, f"part-{shard_index:06d}-{output_index:04d}.tfrecord")


def _marker_path(workdir, shard_index):
    return os.path.join(workdir, f"shard-{shard_index:06d}.done.json")


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


def _single_threaded_tensorflow():
    """With one process per core, TensorFlow's own thread pools only oversubscribe the cores."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # this process has already run TensorFlow ops
        pass


def _worker_main(config, compiled, shards, counter, num_outputs, workdir, results):
    _single_threaded_tensorflow()
    try:
        processor = ShardProcessor(config, compiled)
        for stats in processor.process_all(_claimer(shards, counter), num_outputs, workdir, prefetch=False):
            results.put(("done", dataclasses.asdict(stats)))
    except BaseException:  # report, so the main process can stop with the cause
        import traceback

        results.put(("error", traceback.format_exc()))
    finally:
        results.put(("exit", None))


# ---------------------------------------------------------------------------------------------
# The whole run


def _fingerprint(config, files, output_files, shard_bytes):
    """Identifies the work so that a resumed run only reuses parts made for the same job."""
    state = {
        "config": dataclasses.asdict(config),
        "inputs": [(p, tf.io.gfile.stat(p).length, tf.io.gfile.stat(p).mtime_nsec) for p in files],
        "vocab": (os.path.getsize(config.vocab_file), os.stat(config.vocab_file).st_mtime_ns),
        "outputs": list(output_files),
        "shard_bytes": shard_bytes,
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:16]


def work_dir(config, files, output_files, shard_bytes):
    first = os.path.abspath(output_files[0])
    tag = _fingerprint(config, files, output_files, shard_bytes)
    return os.path.join(os.path.dirname(first), f".{os.path.basename(first)}.work-{tag}")


def _assemble(parts, output_file):
    """Interleaves the parts record by record into `output_file` (temporary name, then rename)."""
    directory = os.path.dirname(os.path.abspath(output_file))
    os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".{os.path.basename(output_file)}.tmp")
    if len(parts) == 1:  # a hard link: no copy, and the part stays whole if we are stopped now
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        try:
            os.link(parts[0], temporary)
        except OSError:
            shutil.copyfile(parts[0], temporary)
    else:
        # Round robin over at most 16 open parts with small read buffers: memory stays flat however
        # many shards there are.
        records = tf.data.Dataset.from_tensor_slices(parts).interleave(
            lambda path: tf.data.TFRecordDataset(path, buffer_size=1 << 16), cycle_length=min(len(parts), 16), block_length=1
        )
        with tf.io.TFRecordWriter(temporary) as writer:
            for batch in records.batch(1024).as_numpy_iterator():
                for record in batch:
                    writer.write(record)
    os.replace(temporary, output_file)


# Below this much input, tracing the graphs costs more than it saves.
_COMPILE_ABOVE_BYTES = 16 << 20
# A worker process spends ~4 s importing TensorFlow before it helps: one per this much input.
_BYTES_PER_EXTRA_WORKER = 8 << 20


def _run_shards(config, shards, num_outputs, workdir, num_workers, total, on_shard_done):
    size = sum(s.end - s.start for s in shards)
    compiled = size >= _COMPILE_ABOVE_BYTES
    extra_workers = max(0, min(num_workers - 1, len(shards) - 1, size // _BYTES_PER_EXTRA_WORKER))
    context = multiprocessing.get_context("spawn")  # TensorFlow does not survive fork
    counter = context.Value("q", 0)
    results = context.Queue()
    workers = [
        context.Process(
            target=_worker_main, args=(config, compiled, shards, counter, num_outputs, workdir, results), daemon=True
        )
        for _ in range(extra_workers)
    ]
    for worker in workers:
        worker.start()
    if workers:
        _single_threaded_tensorflow()
    running, errors = len(workers), []

    def report(stats):
        total.add(stats)
        if on_shard_done:
            on_shard_done(stats)

    def drain(block):
        nonlocal running
        while running:
            try:
                kind, payload = results.get(block=block, timeout=1.0 if block else None)
            except queue.Empty:
                if block and not any(w.is_alive() for w in workers):
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
        processor = ShardProcessor(config, compiled)
        claim = _claimer(shards, counter)
        for stats in processor.process_all(claim, num_outputs, workdir, prefetch=not workers):
            report(stats)
            drain(block=False)
            if errors:
                break
        drain(block=True)
    finally:
        for worker in workers:
            if errors:
                worker.terminate()
            worker.join()
    if errors:
        raise RuntimeError("create_pretraining_data worker failed:\n" + errors[0])


def create_pretraining_data(config, files, output_files, num_workers=1, shard_bytes=1 << 20, on_shard_done=None):
    """Runs the whole job; returns (Stats, resumed_shard_count).

    `on_shard_done(stats_of_that_shard)` is called as shards finish (for progress reporting).
    """
    config.validate()
    shards = plan_shards(files, shard_bytes)
    workdir = work_dir(config, files, output_files, shard_bytes)
    os.makedirs(workdir, exist_ok=True)
    total, pending = Stats(), []
    for shard in shards:
        marker = _marker_path(workdir, shard.index)
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
        _run_shards(config, pending, len(output_files), workdir, num_workers, total, on_shard_done)

    if total.documents == 0:
        with contextlib.suppress(OSError):
            shutil.rmtree(workdir)
        raise ValueError(f"the input has no documents with any tokens: {', '.join(files)}")
    # One thread per output file: reading and writing records is TensorFlow work (no GIL).
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, num_workers)) as pool:
        jobs = [
            pool.submit(_assemble, [_part_path(workdir, s.index, k) for s in shards], output_file)
            for k, output_file in enumerate(output_files)
        ]
        for job in jobs:
            job.result()
    shutil.rmtree(workdir)
    return total, resumed
