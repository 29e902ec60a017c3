"""Create masked-LM / next-sentence TFRecords for BERT pre-training (the original's flags).

    python run_scripts/create_pretraining_data.py \
      --input_file=corpus/*.txt --output_file=out/train-0.tfrecord,out/train-1.tfrecord \
      --vocab_file=vocab.txt --do_lower_case=True --max_seq_length=128 \
      --max_predictions_per_seq=20 --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5 \
      --num_workers=2

Input: one sentence per line, blank lines between documents. Output: the original's features
(input_ids, input_mask, segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights,
next_sentence_labels), so files cross between this and the original release both ways.
The paper's ablations: --mask_token_prob/--random_token_prob (Table 8), --next_sentence=false
(single segments of contiguous text, for a masked LM without next-sentence prediction).

Beyond the original: --num_workers processes, memory bounded by --shard_size_mb rather than by
the corpus (whatever the text: a document or line longer than twice the shard size is cut),
output files written under temporary names and renamed when all are complete, and a run that
is stopped resumes where it was when started again with the same command (the work folder of a
stopped run with other inputs or flags is removed). Bad paths are errors before any work.

--runner=beam runs the same shards as an Apache Beam pipeline (pip install -e ".[beam]") on the
runner that --beam_pipeline_options names, for a corpus that outgrows one machine; the files are
byte-identical to the local run's (docs/scale.md):

    python run_scripts/create_pretraining_data.py ... --runner=beam \
      --beam_pipeline_options="--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing"
"""

import os
import shlex

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.data.pretraining import SHARD_WORKER
from bert_tf.data.worker_pool import WorkerPool
from bert_tf.io_utils import error_line, is_disk_full
from run_scripts.flag_settings import fail, library_call

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files).")
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case",
    True,
    "Whether to lower case the input text. Should be True for uncased models and False for cased models.",
)
flags.DEFINE_bool(
    "do_whole_word_mask", False, "Whether to use whole word masking rather than per-WordPiece masking."
)
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float(
    "short_seq_prob", 0.1, "Probability of creating sequences which are shorter than the maximum length."
)
flags.DEFINE_integer("num_workers", 1, "Worker processes (new; the original has one).")
flags.DEFINE_float(
    "shard_size_mb",
    1.0,
    "Input is processed in shards of about this many MB that end at document boundaries (new). "
    "Peak memory per worker grows with it, not with the corpus; next-sentence B and the instance "
    "shuffle draw from within a shard. A document (or line) longer than twice this is cut.",
)
flags.DEFINE_bool("progress", True, "Show a progress bar with instances/s (local runner).")
flags.DEFINE_enum("runner", "local", ["local", "beam"], "local: --num_workers processes here; beam: an Apache "
                  "Beam pipeline on the runner --beam_pipeline_options names (new).")
flags.DEFINE_string("beam_pipeline_options", "", "With --runner=beam: Beam's own options, as on a Beam command line, "
                    "e.g. \"--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing\".")
# The paper's ablations (new): Table 8's split of the chosen tokens, and §5.1's "No NSP".
flags.DEFINE_float("mask_token_prob", 0.8, "Share of the chosen tokens replaced by [MASK].")
flags.DEFINE_float("random_token_prob", 0.1, "Share replaced by a random token; the rest keep theirs.")
flags.DEFINE_bool("next_sentence", True, "Sentence pairs (next-sentence prediction); false: single segments.")

for _name in ("input_file", "output_file", "vocab_file"):
    flags.mark_flag_as_required(_name)
flags.register_validator("num_workers", lambda n: n >= 1, message="--num_workers must be at least 1")
flags.register_validator("shard_size_mb", lambda mb: mb > 0, message="--shard_size_mb must be positive")


def _output_files():
    return [f.strip() for f in FLAGS.output_file.split(",") if f.strip()]


def _beam_args():
    """--beam_pipeline_options as a list, after the checks that need no work (one line each):
    Beam's own parser and runner checks included, before any folder is made."""
    if FLAGS.runner == "local":
        if FLAGS.beam_pipeline_options:
            fail("--beam_pipeline_options is only read with --runner=beam")
        return None
    if FLAGS["num_workers"].present:
        fail("--num_workers has no meaning with --runner=beam: the Beam runner's options set the workers "
             "(e.g. --beam_pipeline_options=\"--direct_num_workers=2\" on the DirectRunner)")
    try:
        args = shlex.split(FLAGS.beam_pipeline_options)
    except ValueError as e:
        fail(f"--beam_pipeline_options={FLAGS.beam_pipeline_options!r} cannot be split into options: {e}")
    try:
        import apache_beam  # noqa: F401
    except ImportError as e:
        fail(f'--runner=beam needs Apache Beam, which is not installed ({e}): pip install -e ".[beam]"')
    from bert_tf.data.pretraining import beam_pipeline

    library_call(
        lambda: beam_pipeline.check_pipeline_args(args, _output_files()),
        prefix=f"--beam_pipeline_options={FLAGS.beam_pipeline_options!r}: ",
    )
    return args


def main(argv):
    del argv
    beam_args = _beam_args()
    if beam_args is not None:
        _run(None, beam_args)
        return
    # Worker processes first: they import TensorFlow while this process does the same below.
    try:
        workers = WorkerPool(max(0, FLAGS.num_workers - 1), SHARD_WORKER)
    except OSError as e:  # e.g. no room for the shared counter
        fail(f"cannot start --num_workers={FLAGS.num_workers} processes: {error_line(e)}")
    try:
        _run(workers)
    finally:
        workers.close(terminate=True)  # only stops what is still running after an error


def _run(workers, beam_args=None):
    import tensorflow as tf  # after the workers have started
    import tqdm

    from bert_tf.data.pretraining import creation

    creation.freeze_imported_objects()
    output_files = _output_files()
    if os.path.isdir(FLAGS.vocab_file):
        fail(f"--vocab_file={FLAGS.vocab_file} is a directory, not a file")
    if not output_files:
        fail(f"--output_file={FLAGS.output_file!r} names no file")
    config = creation.PretrainingDataConfig(
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        do_whole_word_mask=FLAGS.do_whole_word_mask,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed,
        dupe_factor=FLAGS.dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        mask_token_prob=FLAGS.mask_token_prob,
        random_token_prob=FLAGS.random_token_prob,
        next_sentence=FLAGS.next_sentence,
    )
    job = library_call(
        lambda: creation.plan_job(config, FLAGS.input_file, output_files, FLAGS.num_workers, FLAGS.shard_size_mb),
        flag_names=("mask_token_prob", "random_token_prob"),
    )
    for warning in config.warnings():
        logging.warning("--%s", warning)
    logging.info("*** Reading from %d input file(s) ***", len(job.input_files))
    for path in job.input_files:
        logging.info("  %s", path)

    if beam_args is not None:
        _run_beam(job, beam_args)
        return
    progress = tqdm.tqdm(unit=" instances", dynamic_ncols=True, smoothing=0.1, disable=not FLAGS.progress)
    try:
        summary = creation.run_job(job, lambda stats: progress.update(stats.instances), workers)
    except (ValueError, creation.WorkerError, OSError, tf.errors.OpError) as e:
        if isinstance(e, (OSError, tf.errors.OpError)) or is_disk_full(e):  # finished shards are kept
            fail(f"writing --output_file={FLAGS.output_file} failed (rerun the command to resume): {error_line(e)}")
        fail(str(e))
    finally:
        progress.close()
    _report(summary)


def _run_beam(job, beam_args):
    from bert_tf.data.pretraining import beam_pipeline

    logging.info("*** Running a Beam pipeline: %s ***", " ".join(beam_args) or "Beam's default runner")
    try:
        summary = beam_pipeline.run_job(job, beam_args)
    except ValueError as e:  # an output named by a URL, an input without documents
        fail(str(e))
    except (OSError, beam_pipeline.PipelineError) as e:  # the finished shards are kept
        fail(f"{error_line(e)} (rerun the command to resume)")
    _report(summary)


def _report(summary):
    for level, line in summary.report(prefix="--"):
        logging.log(level, "%s", line)


if __name__ == "__main__":
    app.run(main)
