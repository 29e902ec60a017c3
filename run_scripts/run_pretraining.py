"""Pre-train BERT on TFRecords from create_pretraining_data.py (the original's flags, and more).

    python run_scripts/run_pretraining.py \
      --input_file=out/train-*.tfrecord --output_dir=pretraining_output \
      --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
      --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
      --num_warmup_steps=10 --learning_rate=2e-5

A command line written for the original runs unchanged; --next_sentence_prediction=false trains
the masked LM alone on the same records (the paper's "No NSP"). Started again with the same
command, a run resumes from the latest checkpoint in --output_dir (same step, optimizer state,
schedule, data position and dropout seeds: it ends as an uninterrupted run does); a run whose
num_train_steps is reached only evaluates. Bad flags, paths and files are one-line errors before
training (the first record of every train and eval file is checked: a TFRecord at all, the
flags' lengths, ids below vocab_size); a record found damaged later, or a full disk, is one line
naming the file.
"""

import os

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.io_utils import check_keras_file, check_output_dir, error_line, expand_patterns, is_disk_full
from bert_tf.runs import record as run_record
from bert_tf.training import distribution, prepare
from bert_tf.training.settings import check_schedule, check_weights_may_change
from run_scripts import common_flags, flag_settings, settings_flags
from run_scripts.flag_settings import fail

FLAGS = flags.FLAGS

common_flags.define_run_flags()
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
common_flags.define_tpu_flags()
# New flags.
common_flags.define_training_flags()
flags.DEFINE_string("eval_input_file", None, "Eval TF example files (default: --input_file, as the original).")
flags.DEFINE_bool("next_sentence_prediction", True, "The next-sentence head and loss; false: the masked LM alone.")

for _name in ("input_file", "output_dir"):
    flags.mark_flag_as_required(_name)
settings_flags.require_unless_hf_folder(("bert_config_file",))  # a Hugging Face --init_checkpoint has its config


def _check_files(train_files, eval_files, vocab_size):
    """Before training: every train file's first record and every eval file's must be
    pre-training data of the flags' lengths, with ids the config's vocab holds (the lengths of
    every record are checked again as it is read)."""
    from bert_tf.checkpoints import sources
    from bert_tf.training.pretraining import check_data_files

    eval_flag = "eval_input_file" if FLAGS.eval_input_file else "input_file"
    for flag, files in (("input_file", train_files), (eval_flag, [f for f in eval_files if f not in train_files])):
        try:
            check_data_files(files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, vocab_size)
        except ValueError as e:
            fail(
                f"--{flag}: {e}".replace(
                    "but vocab_size=",
                    f"but --{sources.config_setting(FLAGS.bert_config_file, FLAGS.init_checkpoint)} has vocab_size=",
                )
            )


def _guarded(files, work):
    """`work()`, with an error met while reading `files` (corrupted, truncated) or writing to
    output_dir (a full disk) as one line; a rerun resumes from the last checkpoint written."""
    import tensorflow as tf

    from bert_tf.training.pretraining import input_error_message

    try:
        return work()
    except (OSError, tf.errors.OpError) as e:
        if (message := input_error_message(e, files)) is not None:
            fail(f"reading the input failed: {message}")
        if not is_disk_full(e):
            raise
        fail(
            f"writing to --output_dir={FLAGS.output_dir} failed (rerun the command to resume): "
            f"{error_line(e)}"
        )


def main(argv):
    del argv
    if not FLAGS.do_train and not FLAGS.do_eval:
        fail("At least one of `do_train` or `do_eval` must be True.")
    if FLAGS.do_train:
        flag_settings.library_call(check_weights_may_change)
    distribution.split_cpu(FLAGS.num_cpu_devices)  # before TensorFlow creates its devices
    config = flag_settings.hf_folder_flags(FLAGS) or flag_settings.load_bert_config(FLAGS.bert_config_file)
    try:
        check_output_dir(FLAGS.output_dir)
        check_keras_file(FLAGS.init_checkpoint, "init_checkpoint")
        train_files = expand_patterns(FLAGS.input_file)
        eval_files = expand_patterns(FLAGS.eval_input_file, "eval_input_file") if FLAGS.eval_input_file else train_files
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))

    # Only another program's model files: a pre-training folder keeps no record, and users lay out
    # bert_config.json and vocab.txt beside its checkpoints as Google's releases do.
    flag_settings.library_call(lambda: run_record.check_not_other_model(FLAGS.output_dir, ours=True),
                               flag_names=("output_dir", "init_checkpoint"))
    if run_record.read(FLAGS.output_dir) is not None or run_record.is_search(FLAGS.output_dir):
        fail(f"--output_dir={FLAGS.output_dir} holds a fine-tuning run (or search): its checkpoints hold a task's "
             f"model, not a pre-trainer's. Use another --output_dir (to pre-train further from its encoder, "
             f"--init_checkpoint={FLAGS.output_dir})")
    if FLAGS.do_train:
        flag_settings.library_call(lambda: check_schedule(FLAGS.learning_rate), flag_names=("learning_rate",
                                                                                           "do_train"))
    from bert_tf.training.pretraining import Pretraining, PretrainingSettings, check_next_sentence_head

    flag_settings.library_call(  # a No-NSP checkpoint would leave the next-sentence head untrained
        lambda: check_next_sentence_head(FLAGS.output_dir, FLAGS.init_checkpoint, FLAGS.next_sentence_prediction),
        flag_names=("next_sentence_prediction", "output_dir", "init_checkpoint"),
    )

    settings = flag_settings.settings_or_fail(
        PretrainingSettings,
        FLAGS,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        num_train_steps=FLAGS.num_train_steps,
        num_warmup_steps=FLAGS.num_warmup_steps,
        max_eval_steps=FLAGS.max_eval_steps,
        next_sentence_prediction=FLAGS.next_sentence_prediction,
    )
    strategy = flag_settings.strategy_from_flags(FLAGS)
    flag_settings.batch_sizes_from_flags(FLAGS, strategy.num_replicas_in_sync)
    _check_files(train_files if FLAGS.do_train else [], eval_files if FLAGS.do_eval else [], config.vocab_size)
    try:
        os.makedirs(FLAGS.output_dir, exist_ok=True)
    except OSError as e:
        fail(f"--output_dir={FLAGS.output_dir}: {e.strerror or e}")
    logging.info("Strategy %s with %d replica(s)", flag_settings.strategy_name_from_flags(FLAGS),
                 strategy.num_replicas_in_sync)
    try:
        run = Pretraining(config, settings, strategy)
    except ValueError as e:
        fail(str(e))

    if FLAGS.do_train:
        fields = {"loss": "loss", "mlm_acc": "masked_lm_accuracy", "seq_per_s": "examples_per_second"}
        _guarded(train_files,
                 lambda: flag_settings.train_with_progress(run, train_files, FLAGS.init_checkpoint, fields, FLAGS))
    else:
        logging.info("Evaluating: %s", flag_settings.restore_from_flags(run, FLAGS.init_checkpoint))

    if FLAGS.do_eval:
        try:
            results = _guarded(eval_files, lambda: run.evaluate(eval_files))
            run.write_eval_results(results)
        except ValueError as e:
            fail(str(e))
        prepare.log_results(results)
    logging.info("Checkpoints: %s", FLAGS.output_dir)
    logging.info("TensorBoard: tensorboard --logdir=%s", FLAGS.output_dir)
    if FLAGS.do_eval:
        logging.info("Eval results: %s", os.path.join(FLAGS.output_dir, "eval_results.txt"))


if __name__ == "__main__":
    app.run(main)
