"""Worker processes startable before TensorFlow is imported (create_pretraining_data's shards).

A spawned worker spends seconds importing TensorFlow before it can help. Started first thing in
a script, it does that while the script imports TensorFlow itself, on another core, and is ready
when the script is. This module imports no TensorFlow and none of the code the workers run: the
target is named by a string ("package.module:function") that each worker imports itself.
"""

import importlib
import multiprocessing


class WorkerPool:
    """Spawned worker processes that wait for one job (`submit`), then run `target` on it.

    Each process imports `target` as soon as it starts, while the caller imports TensorFlow,
    and then runs `target(counter, *job, results=results)`. The function takes shards from the
    shared `counter` alongside the caller until none are left, and reports on `results`:
    create_pretraining_data's (`bert_tf.data.pretraining.creation.work_on_shards`) puts
    ("done", stats dict) per shard, ("error", traceback) if it failed, and ("exit", None) last.
    `len()` of the pool is its number of processes.

    Args:
        num_workers: How many processes to start (spawned: TensorFlow does not survive fork).
        target: The function each process runs, named as "package.module:function".

    Attributes:
        counter: The shared shard counter (a `multiprocessing.Value` of type "q").
        results: The queue the processes report on.
        processes: The `multiprocessing.Process`es.
    """

    def __init__(self, num_workers, target):
        context = multiprocessing.get_context("spawn")  # TensorFlow does not survive fork
        self.counter = context.Value("q", 0)
        self.results = context.Queue()
        self._jobs = context.Queue()
        self._submitted = self._closed = False
        self.processes = [
            context.Process(target=_serve, args=(target, self.counter, self._jobs, self.results), daemon=True)
            for _ in range(num_workers)
        ]
        for process in self.processes:
            process.start()

    def __len__(self):
        return len(self.processes)

    def submit(self, *job):
        """Hands every process the job; the counter is reset, so that claims start from shard 0.

        Args:
            *job: The target's arguments after the counter.

        Raises:
            RuntimeError: A job was already submitted, or `close` told the processes there is
                none: a pool runs one job.
        """
        if self._submitted:
            raise RuntimeError("a WorkerPool runs one job")
        self._submitted = True
        with self.counter.get_lock():
            self.counter.value = 0
        for _ in self.processes:
            self._jobs.put(job)

    def close(self, terminate=False):
        """Waits for the processes to end; idle ones are told there is no job.

        Calling it again does nothing.

        Args:
            terminate: Whether to stop the processes first, instead of waiting for their work.
        """
        if self._closed:
            return
        self._closed = True
        if terminate:
            for process in self.processes:
                process.terminate()
        elif not self._submitted:
            self._submitted = True
            for _ in self.processes:
                self._jobs.put(None)
        for process in self.processes:
            process.join()


def _serve(target, counter, jobs, results):
    # The slow part (the target's imports), done while the parent imports TensorFlow too.
    module, _, function = target.partition(":")
    work = getattr(importlib.import_module(module), function)
    job = jobs.get()
    if job is not None:
        work(counter, *job, results=results)
