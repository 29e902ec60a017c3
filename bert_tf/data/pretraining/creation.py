"""create_pretraining_data, scaled: sharded, parallel, bounded in memory, resumable.

The corpus (one sentence per line, blank lines between documents) is cut into shards of about
`shard_bytes` that end at document boundaries (`shards`). Each shard is turned into one part file
per output file in the run's work folder (`shard_processor`, `work_folder`). Two shards are in
work at once per process (threads) and `num_workers` processes share the shards. Once every shard
is done, each output file is assembled by interleaving its parts record by record (as bytes) under
a temporary name; the outputs are renamed into place when all are complete. Every shard has its
own seed (from `random_seed` and its index), so the result does not depend on the number of
workers, and a run started again after an interruption (a kill, a full disk) skips the finished
shards and produces the same files.

Differences from the original, all forced by bounded memory: next-sentence B and the final
instance shuffle draw from the shard, not the whole corpus; a document never spans two files; a
document longer than twice the shard size is cut into several (and a line that long into
pieces), so that no shard holds more than `2 * shard_bytes` of text.

`plan_job`, `run_job` and `Summary` are create_pretraining_data.py's run: every check before any
work, the run with a progress callback, and its report. `beam_pipeline` runs the same plan and
shards on Apache Beam's workers instead of these processes, with `check_instances` and
`rename_outputs` to finish.
"""

import concurrent.futures
import dataclasses
import gc
import os
import queue
import shutil
import time

import tensorflow as tf
from absl import logging

from bert_tf.data.pretraining import SHARD_WORKER, work_folder
from bert_tf.data.pretraining.shard_processor import PretrainingDataConfig, ShardProcessor, Stats, finished_stats
from bert_tf.data.pretraining.shards import Shard, plan_shards, read_shard_lines  # noqa: F401 (re-exported)
from bert_tf.data.pretraining.work_folder import work_dir  # noqa: F401 (re-exported)
from bert_tf.data.worker_pool import WorkerPool
from bert_tf.io_utils import (
    check_beside_writable,
    check_distinct_outputs,
    check_output_file,
    expand_patterns,
    link_target,
)

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


def single_threaded_tensorflow():
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
    single_threaded_tensorflow()
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
        single_threaded_tensorflow()
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
    made = work_folder.claim(workdir)
    total, pending = Stats(), []
    for shard in shards:
        done = finished_stats(work_folder.marker_path(workdir, shard.index))
        if done is not None:  # finished by an earlier, interrupted run
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

    check_instances(total, workdir, files, made)
    temporaries = _assemble(workdir, shards, output_files, threads=max(_THREADS, num_workers))
    rename_outputs(temporaries, output_files, workdir)
    return total, resumed


def check_instances(total, workdir, files, made=None):
    """Raises ValueError when no shard made an instance (the input has no document with a word
    piece), after removing the work folder and the folders `work_folder.claim` made (`made`):
    such a run writes nothing, not even an empty output file."""
    if total.instances == 0:
        work_folder.release(workdir, made)
        raise ValueError(f"no instance was made: --input_file has no documents with any tokens: {', '.join(files)}")


def rename_outputs(temporaries, output_files, workdir):
    """Every output, complete under its temporary name, renamed into place (onto the file it points
    to, for an output that is a symbolic link: the link stays); the work folder removed."""
    for temporary, output_file in zip(temporaries, output_files, strict=True):
        os.replace(temporary, link_target(output_file))
    shutil.rmtree(workdir)


def _assemble(workdir, shards, output_files, threads):
    """Each output file from its parts, under a temporary name (returned; `rename_outputs` puts
    them in place once all are complete: all or none)."""
    # One thread per output file: the byte copies (reads, joins, writes) release the GIL, so two
    # 147 MB outputs take 0.4 s together against 0.47 s for one alone.
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        jobs = [
            pool.submit(work_folder.assemble, [work_folder.part_path(workdir, s.index, k) for s in shards], output_file)
            for k, output_file in enumerate(output_files)
        ]
        concurrent.futures.wait(jobs)
    failed = [job.exception() for job in jobs if job.exception() is not None]
    if failed:
        work_folder.remove(job.result() for job in jobs if job.exception() is None)
        raise failed[0]
    return [job.result() for job in jobs]


# ---------------------------------------------------------------------------------------------
# A job as create_pretraining_data.py runs it: planned (every check before any work), run, and
# reported.


@dataclasses.dataclass(frozen=True)
class Job:
    """`input_files` (patterns already matched) made into `output_files`, in shards of about
    `shard_size_mb` MB, by `num_workers` processes."""

    config: PretrainingDataConfig
    input_files: tuple[str, ...]
    output_files: tuple[str, ...]
    num_workers: int = 1
    shard_size_mb: float = 1.0

    @property
    def shard_bytes(self):
        return max(1, int(self.shard_size_mb * (1 << 20)))


def plan_job(config, input_file, output_files, num_workers=1, shard_size_mb=1.0):
    """The `Job`, after every check that can fail before any work: the settings, the input
    patterns (`input_file`, comma-separated, each matching files), the vocab's special tokens,
    output files that can be written and overwrite no input. Raises ValueError or
    FileNotFoundError (an OSError for a vocab that cannot be read)."""
    config.validate()
    if num_workers < 1:
        raise ValueError(f"num_workers={num_workers} must be at least 1")
    if not shard_size_mb > 0:
        raise ValueError(f"shard_size_mb={shard_size_mb} must be positive")
    files = expand_patterns(input_file)
    ShardProcessor.check_vocab(config.vocab_file)
    if not output_files:
        raise ValueError("output_files names no file")
    for path in output_files:
        check_output_file(path)
        check_beside_writable(path, "output_file")  # a symbolic link's target is what is written
    check_distinct_outputs(output_files, [("input_file", f) for f in files] + [("vocab_file", config.vocab_file)])
    return Job(config, tuple(files), tuple(output_files), num_workers, shard_size_mb)


@dataclasses.dataclass(frozen=True)
class Summary:
    """What `run_job` did: `stats` summed over every shard, of which `resumed` were finished by
    an earlier, interrupted run, in `seconds`."""

    job: Job
    stats: Stats
    resumed: int
    seconds: float

    def report(self, prefix=""):
        """`(absl logging level, line)` pairs, in order: what was resumed, what in the input
        looks wrong, the counts, the files written. Settings are named `{prefix}name` (a script
        passes "--" to name its flags)."""
        s, seconds = self.stats, max(self.seconds, 1e-9)
        lines = []
        if self.resumed:
            lines.append((logging.INFO, f"Resumed: {self.resumed} shard(s) were already done by an earlier run"))
        lines += [(logging.WARNING, line) for line in self._warnings(prefix)]
        lines += [
            (
                logging.INFO,
                f"Documents: {s.documents} ({s.one_sentence_documents} of one sentence), sentences: {s.sentences}, "
                f"corpus word pieces: {s.corpus_tokens}",
            ),
            (
                logging.INFO,
                f"Instances: {s.instances} ({100.0 * s.random_next / max(1, s.instances):.1f}% random next), tokens: "
                f"{s.instance_tokens}, masked tokens: {s.masked_tokens}; {s.instances / seconds:.0f} instances/s",
            ),
            (logging.INFO, f"Wrote {len(self.job.output_files)} file(s) in {self.seconds:.2f} s:"),
        ]
        return lines + [(logging.INFO, f"  {path}") for path in self.job.output_files]

    def _warnings(self, prefix):
        s = self.stats
        if s.invalid_utf8_bytes:
            yield f"Replaced {s.invalid_utf8_bytes} invalid UTF-8 byte(s) in the input"
        if s.cut_documents or s.cut_lines:
            yield (
                f"{s.cut_documents} document(s) and {s.cut_lines} line(s) were longer than twice "
                f"{prefix}shard_size_mb={self.job.shard_size_mb:g} and were cut (each piece is a document of its "
                "own): is the input text, with blank lines between documents?"
            )
        if s.long_lines:
            yield (
                f"{s.long_lines} line(s) have more than {self.job.config.max_seq_length - 3} word pieces and were "
                "cut to fit; split long lines into sentences"
            )
        if s.corpus_tokens and s.unknown_tokens > 0.05 * s.corpus_tokens:
            yield (
                f"{100.0 * s.unknown_tokens / s.corpus_tokens:.1f}% of the word pieces are [UNK]: does "
                f"{prefix}vocab_file/{prefix}do_lower_case match the corpus?"
            )


def run_job(job, on_shard_done=None, workers=None):
    """Runs a `plan_job` job (see `create_pretraining_data` for `on_shard_done` and `workers`);
    returns its `Summary`. Raises ValueError (an input that makes no instance), WorkerError, or an
    OSError or tf.errors.OpError when writing failed (a full disk): the finished shards are
    kept, and the same job run again resumes from them."""
    start = time.time()
    stats, resumed = create_pretraining_data(
        job.config,
        list(job.input_files),
        list(job.output_files),
        num_workers=job.num_workers,
        shard_bytes=job.shard_bytes,
        on_shard_done=on_shard_done,
        workers=workers,
    )
    return Summary(job, stats, resumed, time.time() - start)
