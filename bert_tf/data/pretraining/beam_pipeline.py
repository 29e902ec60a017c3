"""create_pretraining_data as an Apache Beam pipeline: the local run's shard plan, shard processor,
work folder and assembly, run by Beam's workers (DirectRunner, Flink, Spark, ...) instead of
`creation`'s processes. The only module that imports apache_beam (the `beam` extra).

The pipeline plans each input file's shards (`shards.plan_shards`, one file per element, so
files are planned in parallel) and numbers them globally in the order of the files, exactly as
the local plan does; after a Reshuffle, each shard is made (`ShardProcessor.process`, the shard's
own seed, its text read by the worker from the file at the plan's offsets) unless its marker says
an earlier run finished it. Once every shard is done (a side input), one step per output file
interleaves its parts into a temporary beside it (`work_folder.assemble`). The launcher then
renames the outputs into place and removes the work folder, so the files are byte-identical to
the local run's for the same flags, whatever the runner and the number of workers.

The work folder (beside the first output file) is read and written with os calls: every worker
must see it at the same path (one machine, or a filesystem all workers mount).
"""

import dataclasses
import glob
import os
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from bert_tf.data.pretraining import creation, work_folder
from bert_tf.data.pretraining.shard_processor import ShardProcessor, Stats, finished_stats
from bert_tf.data.pretraining.shards import plan_shards

_COUNTERS = "create_pretraining_data"


class PipelineError(RuntimeError):
    """The pipeline failed: the message is the last line of the runner's report (the error of
    the step that failed, e.g. a full disk); `__cause__` is the runner's exception."""

    def __init__(self, error):
        lines = [line for line in str(error).strip().splitlines() if line.strip()]
        super().__init__(f"the Beam pipeline failed: {lines[-1].strip() if lines else type(error).__name__}")


def _plan_file(indexed_file, shard_bytes):
    index, path = indexed_file
    return index, plan_shards([path], shard_bytes)


def _first_indices(shard_counts):
    """{file index: global index of its first shard}: the shards of the files before it come first."""
    first, total = {}, 0
    for index in sorted(shard_counts):
        first[index], total = total, total + shard_counts[index]
    return first


def _number(planned, first_indices):
    """The file's shards with their global indices."""
    file_index, shards = planned
    for shard in shards:
        yield dataclasses.replace(shard, index=first_indices[file_index] + shard.index)


class _MakeShard(beam.DoFn):
    """A shard's part files and marker, unless an earlier run (or an earlier try of this bundle)
    finished it; yields its Stats as a dict."""

    def __init__(self, config, num_outputs, workdir):
        self._config, self._num_outputs, self._workdir = config, num_outputs, workdir
        self._processor = None

    def setup(self):
        creation.freeze_imported_objects()
        # Beam's parallelism is its worker processes (DirectRunner: --direct_num_workers; a
        # cluster: one per core), as the local run's: TensorFlow's own pools would oversubscribe.
        creation.single_threaded_tensorflow()
        self._processor = ShardProcessor(self._config)

    def process(self, shard):
        stats = finished_stats(work_folder.marker_path(self._workdir, shard.index))
        if stats is None:
            stats = self._processor.process(shard, self._num_outputs, self._workdir)
            beam.metrics.Metrics.counter(_COUNTERS, "shards_made").inc()
            beam.metrics.Metrics.counter(_COUNTERS, "instances").inc(stats.instances)
        else:
            beam.metrics.Metrics.counter(_COUNTERS, "shards_resumed").inc()
        yield dataclasses.asdict(stats)


def _sum_stats(dicts):
    total = Stats()
    for d in dicts:
        total.add(Stats(**d))
    return dataclasses.asdict(total)


def _assemble_output(output_index, workdir, output_files, shard_count, total):
    """Output `output_index`'s parts interleaved into its temporary (nothing when the input has
    no documents: the launcher reports that)."""
    if total["documents"]:
        parts = [work_folder.part_path(workdir, i, output_index) for i in range(shard_count)]
        yield work_folder.assemble(parts, output_files[output_index])


def build_pipeline(pipeline, job, workdir):
    """Adds the job's steps to `pipeline` (a `beam.Pipeline`)."""
    files = (
        pipeline
        | "ListFiles" >> beam.Create(list(enumerate(job.input_files)))
        | "SpreadFiles" >> beam.Reshuffle()
    )
    planned = files | "PlanShards" >> beam.Map(_plan_file, job.shard_bytes)
    shard_counts = planned | "CountShards" >> beam.Map(lambda p: (p[0], len(p[1]))) | beam.combiners.ToDict()
    first_indices = shard_counts | "FirstIndices" >> beam.Map(_first_indices)
    stats = (
        planned
        | "NumberShards" >> beam.FlatMap(_number, beam.pvalue.AsSingleton(first_indices))
        | "SpreadShards" >> beam.Reshuffle()
        | "MakeShards" >> beam.ParDo(_MakeShard(job.config, len(job.output_files), workdir))
    )
    total = stats | "SumStats" >> beam.CombineGlobally(_sum_stats)
    shard_count = shard_counts | "TotalShards" >> beam.Map(lambda counts: sum(counts.values()))
    return (
        pipeline
        | "ListOutputs" >> beam.Create(range(len(job.output_files)))
        | "SpreadOutputs" >> beam.Reshuffle()
        | "AssembleOutputs"
        >> beam.FlatMap(
            _assemble_output,
            workdir,
            list(job.output_files),
            beam.pvalue.AsSingleton(shard_count),
            beam.pvalue.AsSingleton(total),
        )
    )


def _finished_markers(workdir):
    return glob.glob(os.path.join(glob.escape(workdir), "shard-*.done.json"))


def run_job(job, pipeline_args=()):
    """Runs a `creation.plan_job` job as a Beam pipeline with `pipeline_args` (Beam's own
    command-line options: the runner and its settings); returns its `creation.Summary`, as the
    local `creation.run_job`. Raises ValueError (an output named by a URL, an input without
    documents) or PipelineError:
    the finished shards are kept, and the same job run again (on either runner) resumes from
    them."""
    start = time.time()
    for path in job.output_files:
        if "://" in path:
            raise ValueError(
                f"--output_file={path} is a URL: the Beam path writes its work folder and outputs with file-system "
                "calls; name a path on a file system that every worker mounts"
            )
    workdir = work_folder.work_dir(job.config, list(job.input_files), list(job.output_files), job.shard_bytes)
    work_folder.claim(workdir)
    resumed = len(_finished_markers(workdir))
    try:
        with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
            build_pipeline(pipeline, job, workdir)
    except Exception as e:  # the runners raise their own types, with the step's traceback as text
        raise PipelineError(e) from e
    total = Stats()
    for marker in _finished_markers(workdir):
        total.add(finished_stats(marker))
    creation.check_documents(total, workdir, job.input_files)
    creation.rename_outputs([work_folder.temporary_path(f) for f in job.output_files], job.output_files, workdir)
    return creation.Summary(job, total, resumed, time.time() - start)
