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
must see it at the same path (one machine, or a filesystem all workers mount). So
`check_pipeline_args` refuses, before anything is made, what could not work: Dataflow (its workers
share no file system with the launcher), a runner Beam does not know, and options Beam does not
know (Beam itself drops them with a log line: a misspelt --direct_num_workers would run with the
default).
"""

import argparse
import dataclasses
import difflib
import glob
import os
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners import DataflowRunner, create_runner
from apache_beam.runners.portability.portable_runner import PortableRunner

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
    """Output `output_index`'s parts interleaved into its temporary (nothing when no instance was
    made: the launcher reports that)."""
    if total["instances"]:
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


class _Parsed(Exception):
    """Carries what Beam's option parser left unknown out of `get_all_options`."""


def _unknown_args(pipeline_args):
    """The args of `pipeline_args` that no Beam options class reads, as Beam's own parser finds
    them (`get_all_options` builds it from every options class imported), and the option names
    it knows. ValueError for a value it refuses (`--direct_num_workers=two`)."""

    def parse(parser):
        parser.exit_on_error = False  # a bad value: an error to report in one line, not a usage dump
        try:
            _, unknown = parser.parse_known_args(pipeline_args)
        except argparse.ArgumentError as e:
            raise ValueError(str(e)) from None
        # Stops get_all_options before it parses again and logs what it drops.
        raise _Parsed(unknown, [name for action in parser._actions for name in action.option_strings])

    try:
        PipelineOptions(pipeline_args).get_all_options(add_extra_args_fn=parse)
    except _Parsed as parsed:
        return parsed.args
    raise AssertionError("get_all_options did not call add_extra_args_fn")


def _split_unknown(unknown):
    """Beam's unknown args as (--options, each with the word after it that is its value, as Beam
    pairs them when it passes unknown options on to a job server; the other words)."""
    options, words, i = [], [], 0
    while i < len(unknown):
        arg = unknown[i]
        if arg.startswith("--") and arg != "--":
            takes_value = "=" not in arg and i + 1 < len(unknown) and not unknown[i + 1].startswith("-")
            options.append(f"{arg} {unknown[i + 1]}" if takes_value else arg)
            i += 2 if takes_value else 1
        else:
            words.append(arg)
            i += 1
    return options, words


def check_pipeline_args(pipeline_args, output_files):
    """ValueError, before anything is made, unless Beam reads every one of `pipeline_args` (Beam
    drops an unknown option or a stray word with a log line), knows their runner, and that
    runner's workers can write `output_files` with file-system calls (Dataflow's cannot; an
    output named by a URL is `run_job`'s to refuse). The messages name Beam's options, not the
    flag that holds them: the caller says where they come from. With a portable runner
    (Flink, Spark, ...) an --option unknown here is left to its job server, which defines options
    of its own (Flink's --checkpointing_interval); a stray word is refused there too."""
    pipeline_args = list(pipeline_args)
    unknown, known = _unknown_args(pipeline_args)
    name = PipelineOptions(pipeline_args).view_as(StandardOptions).runner or StandardOptions.DEFAULT_RUNNER
    try:
        runner = create_runner(name)
    except ValueError as e:  # Beam's message names the runners it knows
        raise ValueError(str(e)) from None
    except (ImportError, AttributeError) as e:  # a module or class of that name not found
        raise ValueError(f"runner {name}: {e}") from None
    options, words = _split_unknown(unknown)
    if isinstance(runner, PortableRunner):
        options = []
    problems = []
    if options:
        guesses = [difflib.get_close_matches(option.split("=")[0].split(" ")[0], known, n=1) for option in options]
        problems.append(
            "Beam has no option "
            + ", ".join(f"{o} (did you mean {g[0]}?)" if g else o for o, g in zip(options, guesses, strict=True))
        )
    if words:
        problems.append(
            f"{', '.join(map(repr, words))} {'is not an option' if len(words) == 1 else 'are not options'} "
            "(Beam reads --name=value or --name value)"
        )
    if problems:
        dropped = "it" if len(words) + len(options) == 1 else "them"
        raise ValueError(f"{'; '.join(problems)}: Beam would drop {dropped} with only a log line")
    if isinstance(runner, DataflowRunner):
        raise ValueError(
            f"runner {name} cannot write --output_file={','.join(output_files)}: Dataflow's workers share no file "
            "system with this machine, and the work folder and outputs are written with file-system calls (a gs:// "
            "output too); use a runner whose workers all mount the output's file system (docs/scale.md)"
        )


def run_job(job, pipeline_args=()):
    """Runs a `creation.plan_job` job as a Beam pipeline with `pipeline_args` (Beam's own
    command-line options: the runner and its settings); returns its `creation.Summary`, as the
    local `creation.run_job`. Raises ValueError before anything is made (`check_pipeline_args`),
    ValueError when no instance was made (nothing is left), or PipelineError: the finished shards
    are kept, and the same job run again (on either runner) resumes from them."""
    start = time.time()
    check_pipeline_args(pipeline_args, job.output_files)
    for path in job.output_files:
        if "://" in path:
            raise ValueError(
                f"--output_file={path} is a URL: the Beam path writes its work folder and outputs with file-system "
                "calls; name a path on a file system that every worker mounts"
            )
    workdir = work_folder.work_dir(job.config, list(job.input_files), list(job.output_files), job.shard_bytes)
    made = work_folder.claim(workdir)
    resumed = len(_finished_markers(workdir))
    try:
        with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
            build_pipeline(pipeline, job, workdir)
    except Exception as e:  # the runners raise their own types, with the step's traceback as text
        raise PipelineError(e) from e
    total = Stats()
    for marker in _finished_markers(workdir):
        total.add(finished_stats(marker))
    creation.check_instances(total, workdir, job.input_files, made)
    creation.rename_outputs([work_folder.temporary_path(f) for f in job.output_files], job.output_files, workdir)
    return creation.Summary(job, total, resumed, time.time() - start)
