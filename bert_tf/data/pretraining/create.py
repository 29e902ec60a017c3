"""create_pretraining_data.py's library half: `create_pretraining_data(settings)` writes the
original's masked-LM / next-sentence TFRecords from a text corpus, in worker processes or as an
Apache Beam pipeline, with every check of the script.

Input: one sentence per line, blank lines between documents. Memory is bounded by
`shard_size_mb` rather than by the corpus; output files are written under temporary names and
renamed when all are complete, and a stopped run resumes where it was when started again with
the same settings.
"""

import os
import shlex

from absl import logging

from bert_tf.errors import SettingError, reported
from bert_tf.fields import Settings as _Base
from bert_tf.fields import given, setting, settings_class

__all__ = ["Settings", "create_pretraining_data"]


@settings_class
class Settings(_Base):
    """create_pretraining_data.py's settings: the original's flags (names and defaults), and ours."""

    input_file: str = setting(None, "Input raw text file (or comma-separated list of files).", kind=str,
                              required=True)
    output_file: str = setting(None, "Output TF example file (or comma-separated list of files).", kind=str,
                               required=True)
    vocab_file: str = setting(None, "The vocabulary file that the BERT model was trained on.", kind=str,
                              required=True)
    do_lower_case: bool = setting(True, "Whether to lower case the input text. Should be True for uncased models and "
                                  "False for cased models.")
    do_whole_word_mask: bool = setting(False, "Whether to use whole word masking rather than per-WordPiece masking.")
    max_seq_length: int = setting(128, "Maximum sequence length.")
    max_predictions_per_seq: int = setting(20, "Maximum number of masked LM predictions per sequence.")
    random_seed: int = setting(12345, "Random seed for data generation.")
    dupe_factor: int = setting(10, "Number of times to duplicate the input data (with different masks).")
    masked_lm_prob: float = setting(0.15, "Masked LM probability.")
    short_seq_prob: float = setting(0.1, "Probability of creating sequences which are shorter than the maximum "
                                    "length.")
    num_workers: int = setting(1, "Worker processes (new; the original has one).")
    shard_size_mb: float = setting(
        1.0, "Input is processed in shards of about this many MB that end at document boundaries (new). Peak memory "
        "per worker grows with it, not with the corpus; next-sentence B and the instance shuffle draw from within a "
        "shard. A document (or line) longer than twice this is cut.")
    progress: bool = setting(True, "Show a progress bar with instances/s (local runner).")
    runner: str = setting("local", "local: --num_workers processes here; beam: an Apache Beam pipeline on the runner "
                          "--beam_pipeline_options names (new).", choices=("local", "beam"))
    beam_pipeline_options: str = setting(
        "", "With --runner=beam: Beam's own options, as on a Beam command line, e.g. \"--runner=DirectRunner "
        "--direct_num_workers=2 --direct_running_mode=multi_processing\".")
    # The paper's ablations (new): Table 8's split of the chosen tokens, and §5.1's "No NSP".
    mask_token_prob: float = setting(0.8, "Share of the chosen tokens replaced by [MASK].")
    random_token_prob: float = setting(0.1, "Share replaced by a random token; the rest keep theirs.")
    next_sentence: bool = setting(True, "Sentence pairs (next-sentence prediction); false: single segments.")


def _output_files(settings):
    return [f.strip() for f in settings.output_file.split(",") if f.strip()]


def _beam_args(settings):
    """`beam_pipeline_options` as a list, after the checks that need no work: Beam's own parser
    and runner checks included, before any folder is made. None for the local runner."""
    s = settings
    if s.runner == "local":
        if s.beam_pipeline_options:
            raise SettingError("--beam_pipeline_options is only read with --runner=beam", "beam_pipeline_options")
        return None
    if given(s, "num_workers"):
        raise SettingError("--num_workers has no meaning with --runner=beam: the Beam runner's options set the "
                           "workers (e.g. --beam_pipeline_options=\"--direct_num_workers=2\" on the DirectRunner)",
                           "num_workers")
    try:
        args = shlex.split(s.beam_pipeline_options)
    except ValueError as e:
        raise SettingError(f"--beam_pipeline_options={s.beam_pipeline_options!r} cannot be split into options: {e}",
                           "beam_pipeline_options") from None
    try:
        import apache_beam  # noqa: F401
    except ImportError as e:
        raise SettingError(f'--runner=beam needs Apache Beam, which is not installed ({e}): pip install -e ".[beam]"',
                           "runner") from None
    from bert_tf.data.pretraining import beam_pipeline

    with reported(f"--beam_pipeline_options={s.beam_pipeline_options!r}: ", setting="beam_pipeline_options"):
        beam_pipeline.check_pipeline_args(args, _output_files(s))
    return args


def create_pretraining_data(settings):
    """Writes the TFRecords the settings ask for, and logs their summary.

    Args:
        settings: A `Settings`.

    Raises:
        SettingError: A setting or path that cannot be used (before any work), or a failure to
            read the input or write the output (the finished shards are kept: the same settings
            resume).
    """
    from bert_tf.data.pretraining import SHARD_WORKER
    from bert_tf.data.worker_pool import WorkerPool
    from bert_tf.io_utils import error_line

    s = settings
    if s.num_workers < 1:
        raise SettingError("--num_workers must be at least 1", "num_workers")
    if not s.shard_size_mb > 0:
        raise SettingError("--shard_size_mb must be positive", "shard_size_mb")
    beam_args = _beam_args(s)
    if beam_args is not None:
        _run(s, None, beam_args)
        return
    # Worker processes first: they import TensorFlow while this process does the same below.
    try:
        workers = WorkerPool(max(0, s.num_workers - 1), SHARD_WORKER)
    except OSError as e:  # e.g. no room for the shared counter
        raise SettingError(f"cannot start --num_workers={s.num_workers} processes: {error_line(e)}",
                           "num_workers") from e
    try:
        _run(s, workers)
    finally:
        workers.close(terminate=True)  # only stops what is still running after an error


def _run(settings, workers, beam_args=None):
    import tensorflow as tf  # after the workers have started
    import tqdm

    from bert_tf.data.pretraining import creation
    from bert_tf.io_utils import error_line, is_disk_full

    s = settings
    creation.freeze_imported_objects()
    output_files = _output_files(s)
    if os.path.isdir(s.vocab_file):
        raise SettingError(f"--vocab_file={s.vocab_file} is a directory, not a file", "vocab_file")
    if not output_files:
        raise SettingError(f"--output_file={s.output_file!r} names no file", "output_file")
    config = creation.PretrainingDataConfig(
        vocab_file=s.vocab_file, do_lower_case=s.do_lower_case, do_whole_word_mask=s.do_whole_word_mask,
        max_seq_length=s.max_seq_length, max_predictions_per_seq=s.max_predictions_per_seq,
        random_seed=s.random_seed, dupe_factor=s.dupe_factor, masked_lm_prob=s.masked_lm_prob,
        short_seq_prob=s.short_seq_prob, mask_token_prob=s.mask_token_prob, random_token_prob=s.random_token_prob,
        next_sentence=s.next_sentence,
    )
    with reported(flag_names=("mask_token_prob", "random_token_prob")):
        job = creation.plan_job(config, s.input_file, output_files, s.num_workers, s.shard_size_mb)
    for warning in config.warnings():
        logging.warning("--%s", warning)
    logging.info("*** Reading from %d input file(s) ***", len(job.input_files))
    for path in job.input_files:
        logging.info("  %s", path)

    if beam_args is not None:
        _run_beam(job, beam_args)
        return
    progress = tqdm.tqdm(unit=" instances", dynamic_ncols=True, smoothing=0.1, disable=not s.progress)
    try:
        summary = creation.run_job(job, lambda stats: progress.update(stats.instances), workers)
    except (ValueError, creation.WorkerError, OSError, tf.errors.OpError) as e:
        if isinstance(e, (OSError, tf.errors.OpError)) or is_disk_full(e):  # finished shards are kept
            raise SettingError(f"writing --output_file={s.output_file} failed (rerun the command to resume): "
                               f"{error_line(e)}", "output_file") from e
        raise SettingError(str(e)) from e
    finally:
        progress.close()
    _report(summary)


def _run_beam(job, beam_args):
    from bert_tf.data.pretraining import beam_pipeline
    from bert_tf.io_utils import error_line

    logging.info("*** Running a Beam pipeline: %s ***", " ".join(beam_args) or "Beam's default runner")
    try:
        summary = beam_pipeline.run_job(job, beam_args)
    except ValueError as e:  # an output named by a URL, an input without documents
        raise SettingError(str(e)) from e
    except (OSError, beam_pipeline.PipelineError) as e:  # the finished shards are kept
        raise SettingError(f"{error_line(e)} (rerun the command to resume)") from e
    _report(summary)


def _report(summary):
    for level, line in summary.report(prefix="--"):
        logging.log(level, "%s", line)
