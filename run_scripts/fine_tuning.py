"""The one fine-tuning driver: every registered task (`bert_tf.runs.registry`) runs through the
same steps, its own parts supplied by its `bert_tf.tasks.contract.FineTuning`: read and check every
input, the run record (and the fields an earlier run must share), the task, train or restore,
evaluate, predict; one run, or a search over the lists of --learning_rate, ... (`run_or_search`)."""

import dataclasses
import os

from absl import logging

from bert_tf.tasks.contract import UsageError
from run_scripts import flag_settings
from run_scripts.flag_settings import fail, library_call, lora_from_flags


def main(flag_values, kind):
    """A fine-tuning script's `main`: runs the task `kind` as the flags say (one run or a search)."""
    from bert_tf.runs import registry

    task_class = library_call(lambda: registry.get(kind).fine_tuning_class())
    task_class.kind = registry.get(kind).name
    run_or_search(flag_values, lambda: run_once(task_class(flag_values)), task_class.evaluation, task_class)


def _step(work, *args):
    """A step that checks input: a library error in it is the script's one error line."""
    return library_call(lambda: work(*args))


def _told(work, *args):
    """A step past the checks (training, evaluation, prediction): what the task words for the
    user (UsageError) and a model whose outputs are NaN or Inf (the loop's Diverged, a
    FloatingPointError: a search records the run as diverged) are one line; any other error keeps
    its traceback."""
    try:
        return work(*args)
    except (UsageError, FloatingPointError) as e:
        fail(str(e))


def run_once(job):
    """The steps of one run of `job` (a FineTuning), in the contract's order."""
    from bert_tf.training.trainer import Trainer

    f = job.flags
    _step(job.check_given)
    config = check_fine_tuning_flags(f, job.actions)
    _step(job.check, config)
    length_bucket, group_by_length = flag_settings.padding_from_flags(f)
    _step(job.read_inputs, config)  # every input is read and checked before any training
    record = _step(job.record, group_by_length)
    training = resume_settings(f, type(job)) if f.do_train else None  # kept: a resumed run must give them again
    check_run_output_dir(f, record, _step(job.fields_to_match, f.do_train), config, training)
    _step(job.check_run, record)
    strategy = flag_settings.strategy_from_flags(f)  # before TensorFlow runs an op (a tokenizer's)
    flag_settings.batch_sizes_from_flags(f, strategy.num_replicas_in_sync)
    task = _step(job.build_task, config, record, length_bucket)
    job.num_train_examples = _step(job.encode, task)
    settings, num_train_steps = fine_tuning_settings(f, job.num_train_examples, length_bucket, job.loss_reads_padding)
    trainer = library_call(lambda: Trainer(task, settings, strategy))
    logging.info("%s; strategy %s with %d replica(s)", job.describe(), flag_settings.strategy_name(f),
                 strategy.num_replicas_in_sync)
    if f.do_train:
        logging.info("***** Running training: %s, batch size %d, %d steps *****", job.training_examples(),
                     f.train_batch_size, num_train_steps)
    train_or_restore_from_flags(trainer, f, _told(job.train_data), record, config, job.progress_fields, training)
    if "do_eval" in job.actions and f.do_eval:
        flag_settings.log_results(_told(job.evaluate, trainer))
    if f.do_predict:
        _told(job.predict, trainer)
    logging.info("Checkpoints and TensorBoard logs: %s", f.output_dir)


# The original scripts' words, run_classifier's unmatched closing quote included.
_NOTHING_TO_DO = {
    ("do_train", "do_eval", "do_predict"): "At least one of `do_train`, `do_eval` or `do_predict' must be True.",
    ("do_train", "do_predict"): "At least one of `do_train` or `do_predict` must be True.",
}


def check_fine_tuning_flags(flag_values, actions=("do_train", "do_eval", "do_predict")):
    """What a fine-tuning script checks before reading any input: something to do, the LoRA flags
    (the rank below the model's widths), the casing against the checkpoint's name, the config (a
    Hugging Face folder's: `hf_folder_flags`), max_seq_length against it, warmup_proportion, a model
    to restore when not training. Splits the CPU as --num_cpu_devices asks (before TensorFlow
    starts). Returns the BertConfig."""
    from bert_tf import tokenization
    from bert_tf.checkpoints import sources
    from bert_tf.training import distribution, settings

    f = flag_values
    if not any(getattr(f, name) for name in actions):
        listed = ", ".join(f"`{name}`" for name in actions)
        fail(_NOTHING_TO_DO.get(tuple(actions)) or f"At least one of {listed} must be True.")
    distribution.split_cpu(f.num_cpu_devices)
    lora_from_flags(f)
    library_call(lambda: tokenization.validate_case_matches_checkpoint(f.do_lower_case, f.init_checkpoint))
    config = flag_settings.hf_folder_flags(f) or flag_settings.load_bert_config(f.bert_config_file)
    if f.max_seq_length < 3:  # BertPackInputs' floor, said before any input is read
        fail(f"--max_seq_length={f.max_seq_length} leaves no room for a text: [CLS] A [SEP] needs 3 positions")
    library_call(
        lambda: config.check_seq_length(f.max_seq_length),
        f"--max_seq_length={f.max_seq_length} vs max_position_embeddings of "
        f"--{sources.config_setting(f.bert_config_file, f.init_checkpoint)}: ",
    )
    if f.lora_rank:
        from bert_tf.models import lora

        library_call(lambda: lora.check_rank(f.lora_rank, config.hidden_size, config.intermediate_size),
                     flag_names=("lora_rank",))
    if not 0.0 <= f.warmup_proportion <= 1.0:
        fail(f"--warmup_proportion={f.warmup_proportion} must be between 0 and 1")
    if f.do_train:
        library_call(lambda: settings.check_schedule(f.learning_rate, f.num_train_epochs),
                     flag_names=("learning_rate", "num_train_epochs", "do_train"))
    flag_settings.output_dir_from_flag(f.output_dir)
    if not f.do_train:
        flag_settings.check_trained_model(f)
    return config


def check_run_output_dir(flag_values, record, same, config=None, training=None):
    """--output_dir must hold nothing, or a run of this task (`same`: the record fields that
    must match) and of `config`, trained with `training` (`resume_settings`: None when this run
    does not train); warnings are logged."""
    from bert_tf.checkpoints.sources import config_setting
    from bert_tf.training import run

    f, given = flag_values, config_setting(flag_values.bert_config_file, flag_values.init_checkpoint)
    names = ("output_dir", "init_checkpoint", "do_lower_case", "max_seq_length", "lora_rank", "lora_alpha",
             "vocab_file", *(name for name in training or () if name in f), *run.RESUMABLE_CHANGES)
    warnings = library_call(lambda: run.check_earlier_run(f.output_dir, lora_from_flags(f, record), same, config,
                                                         given, f.vocab_file, training),
                            flag_names=(*names, "bert_config_file"))
    for warning in warnings:
        logging.warning("%s", flag_settings.as_flags(warning, names))


def fine_tuning_settings(flag_values, num_train_examples, length_bucket, loss_reads_padding=False):
    """`(TrainingSettings, num_train_steps)` from the flags: the original's steps (examples /
    train_batch_size x epochs) and warmup, whether padding is skipped (--skip_padding, unset: the
    default for the batches' `length_bucket`, off where the task's loss reads the padding
    positions' outputs; logged); training with no step is an error."""
    from bert_tf.training import run, settings, speed
    from bert_tf.training.trainer import TrainingSettings

    f = flag_values
    steps, warmup = library_call(lambda: run.training_steps(
        num_train_examples, f.train_batch_size, f.num_train_epochs, f.warmup_proportion), "--")
    training = flag_settings.settings_or_fail(
        TrainingSettings, f, predict_batch_size=f.predict_batch_size, num_train_steps=max(steps, 1),
        num_warmup_steps=warmup, **lora_from_flags(f),
    )
    skip, platform = f.skip_padding, speed.current_platform(f.use_tpu)
    if skip is None:
        skip = not loss_reads_padding and settings.default_skip_padding(length_bucket, training.jit_compile, platform)
        logging.info("skip_padding=%s: the default with length_bucket=%s, jit_compile=%s on %s%s", skip, length_bucket,
                     training.jit_compile, platform, ", a loss over the padding positions" * loss_reads_padding)
    training = library_call(lambda: dataclasses.replace(training, skip_padding=skip), "--")
    if f.do_train and steps < 1:
        fail(
            f"{num_train_examples} training examples / --train_batch_size={f.train_batch_size} x "
            f"--num_train_epochs={f.num_train_epochs} gives no training step"
        )
    return training, steps


def train_or_restore_from_flags(trainer, flag_values, train_data, record, config, fields, training=None):
    """--do_train: trains, the run's files (its `training` settings among them) written beside the
    first checkpoint; otherwise restores the output_dir's latest checkpoint or --init_checkpoint.
    `fields`: the progress bar's label -> log key."""
    from bert_tf.training import run

    f = flag_values
    if not f.do_train:
        status = flag_settings.restore_from_flags(trainer, f.init_checkpoint)
        if status.not_found:
            logging.warning("The task head is not in %s: its outputs are untrained", f.init_checkpoint)
        logging.info("Model %s", status)
        return status
    return flag_settings.with_progress(
        trainer, f, fields,
        lambda progress: run.train_or_restore(
            trainer, train_data, True, f.init_checkpoint,
            lambda: run.write_run_files(f.output_dir, lora_from_flags(f, record), config, f.vocab_file, training),
            progress,
            on_start=lambda: logging.info("%s", trainer.parameters()),
        ),
    )


def run_or_search(f, run, evaluation="do_eval", task_class=None):
    """`run()` with the flags' values; for a search (lists, --restarts>1: `bert_tf.training.search`)
    `run()` per run with the flags set to its values and subfolder, then --do_predict with the
    chosen run, by the figures of the `evaluation` action; the settings its runs share are
    `search_settings(f, task_class)`. Training needs a process
    that can train (`check_weights_may_change`), checked before anything is read or written."""
    from bert_tf.training import search, settings

    if f.do_train:
        library_call(settings.check_weights_may_change)
    names = ("output_dir", "random_seed", "learning_rate", "train_batch_size", "num_train_epochs", "restarts")
    runs = library_call(lambda: search.grid(
        f.learning_rate, f.train_batch_size, f.num_train_epochs, f.restarts, f.random_seed), flag_names=names)

    def use(one, output_dir, **actions):
        for name, value in dict(output_dir=output_dir, random_seed=one.seed, learning_rate=one.learning_rate,
                                train_batch_size=one.train_batch_size, num_train_epochs=one.num_train_epochs,
                                **actions).items():
            setattr(f, name, value)
        run()

    if not search.is_search(runs):
        library_call(lambda: search.check_not_search_folder(f.output_dir), flag_names=names)
        if f.do_train:
            library_call(lambda: search.check_not_search_run(f.output_dir), flag_names=names)
        return use(runs[0], f.output_dir)
    if not (f.do_train and f[evaluation].value):
        fail(f"a search (a list in --learning_rate, --train_batch_size or --num_train_epochs, or --restarts>1) "
             f"needs --do_train and --{evaluation}: it chooses its run by the dev figures")
    predict, each = f.do_predict and evaluation != "do_predict", {"do_predict": evaluation == "do_predict"}
    shared = search_settings(f, task_class)
    done = library_call(lambda: search.search(
        f.output_dir, runs, f.random_seed, lambda one, run_dir: use(one, run_dir, **each),
        lambda message: logging.info("***** Search: %s *****", message), shared), flag_names=names + tuple(shared))
    if predict:
        use(done.chosen.run, done.chosen.run_dir, do_train=False, do_eval=False, do_predict=True)


# The flags whose values every run of a search shares and that change what a run learns (the
# grid's own and those of speed or output aside), beyond each task's (`FineTuning.search_flags`).
_SEARCH_PATHS = ("init_checkpoint", "bert_config_file", "vocab_file", "data_dir")
_SEARCH_SETTINGS = ("do_lower_case", "max_seq_length", "warmup_proportion", "optimizer", "gradient_accumulation_steps",
                    "mixed_precision", "lora_rank", "lora_alpha", "group_by_length")
# The order search.json lists them in (the first that differs is the one a continuation names);
# a task's flags not named here follow.
_SEARCH_ORDER = (
    "init_checkpoint", "bert_config_file", "vocab_file", "data_dir", "train_file", "predict_file", "labels_file",
    "labels", "task_name", "tfds_name", "xnli_language", *_SEARCH_SETTINGS, "doc_stride", "max_query_length",
    "version_2_with_negative", "feature_based", "lstm_units",
)


def resume_settings(f, task_class):
    """`{flag name: value}` of the settings that decide a training run's steps, as its record keeps
    them: those every run of a search shares (`search_settings`: the starting checkpoint, the data,
    the lengths, the optimizer, ...), the grid's own (learning rate, batch size, seed) and the CPU
    kernels (`bert_tf.kernels`). The vocabulary and the config are compared by what they hold, not
    by their paths (`bert_tf.training.run.check_earlier_run`)."""
    from bert_tf import kernels

    paths = _SEARCH_PATHS + tuple(task_class.search_paths)
    values = {name: os.path.realpath(value) if name in paths and value else value  # a link is its target
              for name, value in search_settings(f, task_class).items()
              if name not in ("vocab_file", "bert_config_file")}
    # The CPU kernels too: oneDNN's and Eigen's round differently, so a resume on the others is not exact.
    return {**values, "learning_rate": f.learning_rate, "train_batch_size": f.train_batch_size,
            "random_seed": f.random_seed, kernels.VARIABLE: kernels.setting()}


def search_settings(f, task_class=None):
    """`{flag name: value}` of the settings every run of a search of `task_class` shares (those
    above the script has, and the task's `search_flags`; without a class, every registered task's),
    as its runs will take them: the casing a Hugging Face folder given as --init_checkpoint has,
    paths (the model, its config and vocabulary, the data: the task's `search_paths` too) made
    absolute, LoRA's alpha resolved, then the task's `shared_settings`."""
    from bert_tf.runs import registry

    classes = [task_class] if task_class else [kind.fine_tuning_class() for kind in registry.KINDS.values()]
    flag_settings.hf_folder_flags(f)
    paths = _SEARCH_PATHS + tuple(p for c in classes for p in c.search_paths)
    names = paths + _SEARCH_SETTINGS + tuple(n for c in classes for n in c.search_flags)
    values = {name: f[name].value for name in names if name in f}
    values.update(lora_from_flags(f))
    for name in paths:
        if values.get(name):
            values[name] = os.path.abspath(values[name])
    for task in classes:
        values = task.shared_settings(values)
    rank = {name: i for i, name in enumerate(_SEARCH_ORDER)}
    return dict(sorted(values.items(), key=lambda item: rank.get(item[0], len(rank))))
