"""run_pretraining.py's library half: `pretrain(settings)` pre-trains (or evaluates) BERT on the
TFRecords of create_pretraining_data.py, with every check and guarantee of the script.

A run started again with the same settings resumes from the latest checkpoint in `output_dir`
(same step, optimizer state, schedule, data position and dropout seeds: it ends as an
uninterrupted run does); a run whose `num_train_steps` is reached only evaluates. Bad settings,
paths and files raise `bert_tf.errors.SettingError` before training (the first record of every
train and eval file is checked: a TFRecord at all, the settings' lengths, ids below vocab_size);
a record found damaged later, or a full disk, raises one too, naming the file.
"""

import os

from absl import logging

from bert_tf.errors import SettingError, reported
from bert_tf.fields import RUN, SEARCH, like, setting, settings_class, shared_fields
from bert_tf.runs import record as run_record
from bert_tf.training import prepare
from bert_tf.training.groups import Evaluation, RunSettings, Sources, Tpu, Training

__all__ = ["Settings", "pretrain"]


@settings_class
class Settings(Tpu, Training, Evaluation):
    """Pre-training settings: the original run_pretraining.py's flags (names and defaults), and ours."""

    bert_config_file: str = like(Sources, "bert_config_file", shared=None, order=None, compared_by_content=False)
    # RUN: a resumed run must keep it (it decides the steps; `training_settings`).
    init_checkpoint: str = like(Sources, "init_checkpoint", shared=RUN, order=None)
    input_file: str = setting(None, "Input TF example files (can be a glob or comma separated).", kind=str,
                              required=True, shared=RUN)
    output_dir: str = like(RunSettings, "output_dir")
    max_seq_length: int = like(RunSettings, "max_seq_length", shared=RUN, order=None)
    max_predictions_per_seq: int = setting(20, "Maximum number of masked LM predictions per sequence.", shared=RUN)
    do_train: bool = like(RunSettings, "do_train")
    train_batch_size: int = like(RunSettings, "train_batch_size", many=False, shared=RUN)
    learning_rate: float = like(RunSettings, "learning_rate", many=False, shared=RUN)
    num_train_steps: int = setting(100000, "Number of training steps.")
    num_warmup_steps: int = setting(10000, "Number of warmup steps.", shared=RUN)
    save_checkpoints_steps: int = like(RunSettings, "save_checkpoints_steps")
    iterations_per_loop: int = like(RunSettings, "iterations_per_loop")
    max_eval_steps: int = setting(100, "Maximum number of eval steps.")
    eval_input_file: str = setting(None, "Eval TF example files (default: --input_file, as the original).", kind=str)
    next_sentence_prediction: bool = setting(True, "The next-sentence head and loss; false: the masked LM alone.",
                                             shared=RUN)


# What may change when a pre-training run resumes: how far it goes, and how it is run and kept.
RESUMABLE_CHANGES = ("num_train_steps", "eval_batch_size", "max_eval_steps", "save_checkpoints_steps",
                     "keep_checkpoints", "jit_compile", "eval_input_file", "do_eval")


def training_settings(settings, train_files):
    """The settings that decide a pre-training run's steps, as its folder keeps them.

    Args:
        settings: The run's `Settings`.
        train_files: The training files `input_file` names, expanded.

    Returns:
        name -> value: the fields marked RUN or SEARCH (the data, lengths, batch, learning rate and
        warmup, optimizer, precision, seed, starting checkpoint, ...), paths as their real targets,
        and the CPU kernels (`bert_tf.kernels`: oneDNN's and Eigen's round differently).
    """
    from bert_tf import kernels

    values = {name: getattr(settings, name) for name in shared_fields(type(settings), RUN, SEARCH)}
    values["input_file"] = sorted(os.path.realpath(path) for path in train_files)
    if values.get("init_checkpoint"):
        values["init_checkpoint"] = os.path.realpath(values["init_checkpoint"])
    return {**values, kernels.VARIABLE: kernels.setting()}


def _check_files(settings, train_files, eval_files, vocab_size):
    """Before training: every train file's first record and every eval file's must be
    pre-training data of the settings' lengths, with ids the config's vocab holds (the lengths of
    every record are checked again as it is read)."""
    from bert_tf.checkpoints import sources
    from bert_tf.training.pretraining import check_data_files

    s = settings
    eval_setting = "eval_input_file" if s.eval_input_file else "input_file"
    for name, files in (("input_file", train_files), (eval_setting, [f for f in eval_files if f not in train_files])):
        try:
            check_data_files(files, s.max_seq_length, s.max_predictions_per_seq, vocab_size)
        except ValueError as e:
            config = sources.config_setting(s.bert_config_file, s.init_checkpoint)
            raise SettingError(f"--{name}: {e}".replace("but vocab_size=", f"but --{config} has vocab_size="),
                               name) from None


def _guarded(settings, files, work):
    """`work()`, with an error met while reading `files` (corrupted, truncated) or writing to
    output_dir (a full disk) raised as a SettingError; a rerun resumes from the last checkpoint."""
    import tensorflow as tf

    from bert_tf.io_utils import error_line, is_disk_full
    from bert_tf.training.pretraining import input_error_message

    try:
        return work()
    except (OSError, tf.errors.OpError) as e:
        if (message := input_error_message(e, files)) is not None:
            raise SettingError(f"reading the input failed: {message}", "input_file") from e
        if not is_disk_full(e):
            raise
        raise SettingError(f"writing to --output_dir={settings.output_dir} failed (rerun the command to resume): "
                           f"{error_line(e)}", "output_dir") from e


def _check_output_folder(settings):
    """The output folder: one this process can write, holding no other program's model and no
    fine-tuning run (its checkpoints hold a task's model, not a pre-trainer's)."""
    from bert_tf.runs import record as run_record

    s = settings
    # Only another program's model files: a pre-training folder keeps no record, and users lay out
    # bert_config.json and vocab.txt beside its checkpoints as Google's releases do.
    with reported(flag_names=("output_dir", "init_checkpoint")):
        run_record.check_not_other_model(s.output_dir, ours=True)
    if run_record.read(s.output_dir) is not None or run_record.is_search(s.output_dir):
        raise SettingError(f"--output_dir={s.output_dir} holds a fine-tuning run (or search): its checkpoints hold a "
                           "task's model, not a pre-trainer's. Use another --output_dir (to pre-train further from "
                           f"its encoder, --init_checkpoint={s.output_dir})", "output_dir")


def _check_resume(settings, training):
    """A run that resumes the one in output_dir must give the settings its steps were taken with."""
    from bert_tf import kernels
    from bert_tf.training.run import check_resumed_settings

    if not os.path.isdir(settings.output_dir):
        return
    names = (*(name for name in training if name != kernels.VARIABLE), "output_dir", *RESUMABLE_CHANGES)
    with reported(flag_names=names):
        warnings = check_resumed_settings(settings.output_dir, training, RESUMABLE_CHANGES)
    for warning in warnings:
        logging.warning("%s", warning)


def pretrain(settings):
    """Pre-trains and evaluates as `settings` say: run_pretraining.py's run.

    Args:
        settings: A `Settings`.

    Returns:
        The eval figures (a dict) when `do_eval`, else None.

    Raises:
        SettingError: A setting, path or input file that cannot be used (before training), or an
            input record found damaged, or a full disk, during the run.
    """
    from bert_tf.io_utils import check_keras_file, check_output_dir, expand_patterns
    from bert_tf.training.pretraining import Pretraining, PretrainingSettings, check_next_sentence_head
    from bert_tf.training.settings import check_schedule, check_weights_may_change

    s = settings
    if not s.do_train and not s.do_eval:
        raise SettingError("At least one of `do_train` or `do_eval` must be True.", "do_train")
    if s.do_train:
        with reported():
            check_weights_may_change()
    prepare.split_cpu(s)  # before TensorFlow creates its devices
    s, config = prepare.resolve_sources(s)
    config = config or prepare.load_config(s.bert_config_file)
    with reported():
        check_output_dir(s.output_dir)
        check_keras_file(s.init_checkpoint, "init_checkpoint")
        train_files = expand_patterns(s.input_file)
        eval_files = expand_patterns(s.eval_input_file, "eval_input_file") if s.eval_input_file else train_files
    _check_output_folder(s)
    if s.do_train:
        with reported(flag_names=("learning_rate", "do_train")):
            check_schedule(s.learning_rate)
    # A No-NSP checkpoint would leave the next-sentence head untrained.
    with reported(flag_names=("next_sentence_prediction", "output_dir", "init_checkpoint")):
        check_next_sentence_head(s.output_dir, s.init_checkpoint, s.next_sentence_prediction)

    loop = prepare.loop_settings(
        PretrainingSettings, s, max_seq_length=s.max_seq_length, max_predictions_per_seq=s.max_predictions_per_seq,
        num_train_steps=s.num_train_steps, num_warmup_steps=s.num_warmup_steps, max_eval_steps=s.max_eval_steps,
        next_sentence_prediction=s.next_sentence_prediction,
    )
    strategy = prepare.strategy(s)
    prepare.check_batch_sizes(s, strategy.num_replicas_in_sync)
    _check_files(s, train_files if s.do_train else [], eval_files if s.do_eval else [], config.vocab_size)
    training = training_settings(s, train_files) if s.do_train else None
    if training is not None:
        _check_resume(s, training)
    try:
        os.makedirs(s.output_dir, exist_ok=True)
    except OSError as e:
        raise SettingError(f"--output_dir={s.output_dir}: {e.strerror or e}", "output_dir") from e
    logging.info("Strategy %s with %d replica(s)", prepare.strategy_name(s), strategy.num_replicas_in_sync)
    with reported():
        run = Pretraining(config, loop, strategy)

    if s.do_train:
        fields = {"loss": "loss", "mlm_acc": "masked_lm_accuracy", "seq_per_s": "examples_per_second"}
        from bert_tf.training.run import writing_first

        keep = lambda: run_record.write_training_settings(s.output_dir, training)  # noqa: E731
        train = lambda progress: run.train(  # noqa: E731
            train_files, s.init_checkpoint, on_log=writing_first(run, keep, progress))[0]
        _guarded(s, train_files, lambda: prepare.with_progress(run, s, fields, train))
    else:
        logging.info("Evaluating: %s", prepare.restore(run, s.init_checkpoint))

    results = None
    if s.do_eval:
        with reported():
            results = _guarded(s, eval_files, lambda: run.evaluate(eval_files))
            run.write_eval_results(results)
        prepare.log_results(results)
    logging.info("Checkpoints: %s", s.output_dir)
    logging.info("TensorBoard: tensorboard --logdir=%s", s.output_dir)
    if s.do_eval:
        logging.info("Eval results: %s", os.path.join(s.output_dir, "eval_results.txt"))
    return results
