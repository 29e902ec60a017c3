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
"""

import concurrent.futures
import contextlib
import dataclasses
import gc
import json
import os
import queue
import shutil

import tensorflow as tf

from bert_tf.data.pretraining import SHARD_WORKER, work_folder
from bert_tf.data.pretraining.shard_processor import (  # noqa: F401 (PretrainingDataConfig re-exported)
    PretrainingDataConfig,
    ShardProcessor,
    Stats,
)
from bert_tf.data.pretraining.shards import Shard, plan_shards, read_shard_lines  # noqa: F401 (re-exported)
from bert_tf.data.pretraining.work_folder import work_dir  # noqa: F401 (re-exported)
from bert_tf.data.worker_pool import WorkerPool
from bert_tf.io_utils import check_distinct_outputs

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
