"""What every training and prediction run does with its settings before the loop runs: the
starting model's files and casing, the strategy, the padding, the loop's settings, LoRA, the
checks of the output folder, and restoring or training with a progress display.

Each function takes the run's settings (a settings dataclass of `bert_tf.fields`, or any object
with the same attributes and a `given` set) and raises `bert_tf.errors.SettingError` with the
line a script prints.
"""

import dataclasses

from absl import logging

from bert_tf.errors import SettingError, reported

__all__ = [
    "check_batch_sizes", "check_output_dir", "check_trained_model", "load_config", "log_jit_choice", "log_results",
    "lora", "loop_settings", "padding", "resolve_sources", "restore", "split_cpu", "steps_per_execution", "strategy",
    "strategy_name", "tpu_strategy", "with_progress",
]


def _given(settings, name):
    return name in (getattr(settings, "given", None) or ())




def load_config(path, setting="bert_config_file"):
    """The BertConfig at `path`; its warnings (a misspelt key) logged, one line each.

    Args:
        path: A bert_config.json.
        setting: The setting that named it (in the messages).

    Returns:
        The BertConfig.

    Raises:
        SettingError: The file cannot be read as a config.
    """
    from bert_tf.checkpoints import sources

    with reported("--", setting=setting):
        config, warnings = sources.read_config(path, setting)
    for warning in warnings:
        logging.warning("--%s", warning)
    return config


def resolve_sources(settings):
    """The settings with what the starting checkpoint implies, and its config.

    With `init_checkpoint` a Hugging Face folder: the folder's vocabulary and casing (where the
    settings have those fields), and its BertConfig. Otherwise the vocabulary, config and casing
    not given are taken from beside the checkpoint (`sources.files_beside`), and the config is
    None (the caller reads `bert_config_file`).

    Args:
        settings: A run's settings.

    Returns:
        `(settings, config or None)`: new settings; the given ones are not changed.

    Raises:
        SettingError: A vocabulary, config or casing given that contradicts the checkpoint's.
    """
    from bert_tf.checkpoints import hf, sources

    s = settings
    given = {name: getattr(s, name) for name in ("vocab_file", "do_lower_case") if hasattr(s, name) and _given(s, name)}
    if not hf.is_hf_folder(s.init_checkpoint):
        kept = {name: getattr(s, name) for name in ("vocab_file", "bert_config_file") if hasattr(s, name)}
        with reported(flag_names=("do_lower_case", "vocab_file")):
            found = sources.files_beside(s.init_checkpoint, do_lower_case=given.get("do_lower_case"), **kept)
        names = {"vocab_file", "bert_config_file", "do_lower_case"}
        return dataclasses.replace(s, **{name: found[name] for name in names if hasattr(s, name)}), None
    config = load_config(s.bert_config_file) if s.bert_config_file else None
    with reported("--", setting="init_checkpoint"):
        found = hf.folder_settings(s.init_checkpoint, config, s.bert_config_file, hasattr(s, "vocab_file"), **given)
    names = {"vocab_file", "do_lower_case"}
    return dataclasses.replace(s, **{name: getattr(found, name) for name in names if hasattr(s, name)}), found.config


def split_cpu(settings):
    """Splits the host CPU into `num_cpu_devices` logical devices, as the settings ask (before
    TensorFlow creates its devices: a script does it first; in a Python process that already ran
    TensorFlow only the split it has can be asked for again).

    Args:
        settings: Settings with `num_cpu_devices`.

    Raises:
        SettingError: TensorFlow has started with another split.
    """
    from bert_tf.training import distribution

    try:
        distribution.split_cpu(settings.num_cpu_devices)
    except RuntimeError as e:
        raise SettingError(f"--num_cpu_devices={settings.num_cpu_devices}: {e}", "num_cpu_devices") from None


def strategy_name(settings):
    """The name of the tf.distribute strategy the settings ask for.

    Args:
        settings: Settings with `use_tpu`, `num_gpus`, `num_cpu_devices` (and, where the run
            has it, `distribution_strategy`).

    Returns:
        One of `bert_tf.training.distribution.STRATEGIES`.
    """
    from bert_tf.training import distribution

    s = settings
    return getattr(s, "distribution_strategy", None) or distribution.default_strategy_name(
        s.use_tpu, s.num_gpus, s.num_cpu_devices)


def strategy(settings):
    """Sets the mixed-precision policy and creates the tf.distribute strategy the settings ask for.

    `distribution.split_cpu(settings.num_cpu_devices)` must have run first, before TensorFlow
    started.

    Args:
        settings: Settings with the training and TPU groups' fields (`bert_tf.training.groups`).

    Returns:
        The strategy.

    Raises:
        SettingError: The strategy cannot be created (no TPU reachable, a bad cluster).
    """
    import keras
    import tensorflow as tf

    from bert_tf.training import distribution

    tf.get_logger().setLevel("WARNING")  # tf.distribute logs every cross-device reduction
    policies = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
    # Set either way: a process that runs several (a notebook, a search) must not keep an earlier run's.
    keras.mixed_precision.set_global_policy(policies.get(settings.mixed_precision, "float32"))
    name = strategy_name(settings)
    # Strategies (collective ops in particular) must exist before TensorFlow runs any op.
    s = settings
    try:
        return distribution.create_strategy(name, s.num_gpus, s.num_cpu_devices, s.tpu_name or s.master, s.tpu_zone,
                                            s.gcp_project)
    except Exception as e:  # noqa: BLE001 - every way of not reaching a TPU/cluster ends here
        where = ""
        if name == "tpu":
            where = (f" (no TPU reachable at tpu_name={s.tpu_name!r}, master={s.master!r}, "
                     f"tpu_zone={s.tpu_zone!r}, gcp_project={s.gcp_project!r})")
        raise SettingError(f"--distribution_strategy={name}{where}: {e}", "distribution_strategy") from e


def tpu_strategy(settings):
    """A TPUStrategy for `use_tpu`.

    Args:
        settings: Settings with the TPU group's fields.

    Returns:
        The strategy.

    Raises:
        SettingError: No TPU is reachable.
    """
    from bert_tf.training import distribution

    s = settings
    try:
        return distribution.create_strategy("tpu", 0, 0, s.tpu_name or s.master, s.tpu_zone, s.gcp_project)
    except Exception as e:  # every way of not reaching a TPU ends here
        raise SettingError(f"--use_tpu is set but no TPU is reachable (tpu_name={s.tpu_name!r}, master={s.master!r}, "
                           f"tpu_zone={s.tpu_zone!r}): {e}", "use_tpu") from e


def steps_per_execution(settings):
    """The training steps per call: `steps_per_execution`, else `iterations_per_loop` on a TPU, else 1.

    Args:
        settings: Settings with the run's and the training group's fields.

    Returns:
        An int.
    """
    s = settings
    return s.steps_per_execution or (s.iterations_per_loop if strategy_name(s) == "tpu" else 1)


def log_jit_choice(name, choice):
    """Logs an XLA setting resolved by bert_tf.training.speed: its value and where it came from,
    after the warning of an unreadable speed file.

    Args:
        name: The setting's name, as the log line gives it.
        choice: A `bert_tf.training.speed.JitChoice`.

    Returns:
        The chosen value.
    """
    if choice.warning:
        logging.warning("%s", choice.warning)
    logging.info("%s=%s: %s", name, choice.value, choice.source)
    return choice.value


def loop_settings(settings_class, settings, **values):
    """The loop's settings: those every training run has, from `settings`, plus `values`. Logs the
    CPU kernels' and XLA's choices.

    Args:
        settings_class: `bert_tf.training.trainer.TrainingSettings` or a subclass.
        settings: The run's settings.
        **values: The loop settings the run's settings do not give (steps, warmup, ...).

    Returns:
        A `settings_class`.

    Raises:
        SettingError: A value the loop refuses, naming its setting.
    """
    from bert_tf import kernels
    from bert_tf.training.speed import choose_jit_compile

    s = settings
    logging.info("%s", kernels.describe())  # chosen before TensorFlow loaded (run_scripts/__init__.py)
    jit = log_jit_choice("jit_compile", choose_jit_compile(s.jit_compile, use_tpu=strategy_name(s) == "tpu"))
    shared = dict(
        output_dir=s.output_dir, train_batch_size=s.train_batch_size, eval_batch_size=getattr(s, "eval_batch_size", 8),
        learning_rate=s.learning_rate, save_checkpoints_steps=s.save_checkpoints_steps, optimizer=s.optimizer,
        gradient_accumulation_steps=s.gradient_accumulation_steps, steps_per_execution=steps_per_execution(s),
        keep_checkpoints=s.keep_checkpoints, jit_compile=jit, seed=s.random_seed,
    )
    try:
        return settings_class(**shared, **values)
    except ValueError as e:  # the messages start with the setting's name
        raise SettingError(f"--{e}", str(e).partition("=")[0].partition(" ")[0]) from None


def lora(settings, record=None):
    """LoRA's settings, checked, with alpha resolved (`bert_tf.runs.record.lora_settings`).

    Args:
        settings: Settings with the LoRA group's fields.
        record: A RunRecord, or None.

    Returns:
        `{"lora_rank", "lora_alpha"}`, or `record` with them when given.

    Raises:
        SettingError: A rank or alpha that cannot be used.
    """
    from bert_tf.training.settings import lora_settings as checked

    s = settings
    with reported(flag_names=("lora_rank", "lora_alpha")):
        values = checked(s.lora_rank, s.lora_alpha)
    return values if record is None else dataclasses.replace(record, **values)


def padding(settings):
    """The batches' padding: their length bucket and whether training batches are grouped by length.

    Unset, the bucket follows the XLA choice (logged): `jit_compile`'s, else Keras' (predict
    compiles on a GPU).

    Args:
        settings: Settings with the padding group's fields (those a run has), `max_seq_length`
            and `use_tpu`.

    Returns:
        `(length_bucket, group_by_length)`; length_bucket None for fixed shapes (asked for, or
        on a TPU).

    Raises:
        SettingError: A bucket that would be dropped or never reached, or fixed shapes refused on a TPU.
    """
    from bert_tf.training import settings as checks
    from bert_tf.training import speed

    s = settings
    if s.use_tpu and _given(s, "pad_to_max_seq_length") and not s.pad_to_max_seq_length:
        raise SettingError("--pad_to_max_seq_length=false is not possible with --use_tpu: TPUs need static shapes",
                           "pad_to_max_seq_length")
    fixed = s.pad_to_max_seq_length or s.use_tpu or (hasattr(s, "distribution_strategy") and strategy_name(s) == "tpu")
    if fixed and s.length_bucket is not None:
        why = "--pad_to_max_seq_length" if s.pad_to_max_seq_length else "a TPU (static shapes)"
        raise SettingError(f"--length_bucket={s.length_bucket} has no use with {why}: every batch is padded to "
                           "--max_seq_length", "length_bucket")
    if s.length_bucket is not None and s.length_bucket > s.max_seq_length:
        raise SettingError(f"--length_bucket={s.length_bucket} is above --max_seq_length={s.max_seq_length}: no "
                           "batch is longer; give at most that", "length_bucket")
    auto = s.length_bucket is None and not fixed
    jit = False
    if auto and hasattr(s, "jit_compile"):
        with reported("--", setting="jit_compile"):
            jit = speed.jit_compile_for(s.jit_compile)
    elif auto:
        jit = speed.current_platform() == "gpu"
    grouped = getattr(s, "group_by_length", False)
    with reported("--", setting="length_bucket"):
        values = checks.padding_settings(s.length_bucket, fixed, grouped, jit)
    if auto:
        logging.info("length_bucket=%d: the default %s XLA", values["length_bucket"], "with" if jit else "without")
    return values["length_bucket"], values["group_by_length"]


def check_output_dir(output_dir):
    """Checks that `output_dir` is a folder this process can write (not a file, nor under one).

    Args:
        output_dir: The run's output folder.

    Raises:
        SettingError: It cannot be written.
    """
    from bert_tf.io_utils import check_output_dir as check

    with reported(setting="output_dir"):
        check(output_dir)


def check_trained_model(settings):
    """Before any work, for a run that does not train: checks that a model to restore exists.

    Args:
        settings: Settings with `output_dir` and `init_checkpoint`.

    Raises:
        SettingError: Neither holds a model.
    """
    from bert_tf.training import run

    if not run.has_model(settings.output_dir, settings.init_checkpoint):
        raise SettingError(f"--{run.nothing_to_restore(settings.output_dir)}", "init_checkpoint")


def check_batch_sizes(settings, replicas):
    """Checks the batch sizes against the number of replicas (and accumulation steps), before any work.

    Args:
        settings: Settings with the batch sizes the run has.
        replicas: The strategy's replicas in sync.

    Raises:
        SettingError: A batch size that does not divide.
    """
    from bert_tf.training.trainer import check_batch_sizes as check

    with reported("--"):
        check(settings, replicas)


def with_progress(trainer, settings, fields, work):
    """Trains with a progress display.

    Args:
        trainer: The `bert_tf.training.trainer.Trainer`.
        settings: Settings with `progress` and `iterations_per_loop`.
        fields: The progress bar's label -> the training log's key.
        work: A function of the progress display that trains; returns the restore status.

    Returns:
        What `work` returns.

    Raises:
        SettingError: A library error of the training's inputs or settings.
    """
    from bert_tf.training.progress import Progress

    progress = Progress(settings.progress, trainer.settings.num_train_steps, settings.iterations_per_loop, fields)
    try:
        with reported():
            status = work(progress)
    finally:
        progress.close()
    logging.info("Training %s; now at step %d", status, trainer.global_step)
    return status


def restore(trainer, init_checkpoint):
    """Without training: restores the output folder's latest checkpoint, or `init_checkpoint`.

    Args:
        trainer: The `bert_tf.training.trainer.Trainer`.
        init_checkpoint: The checkpoint to restore when the output folder has none.

    Returns:
        The restore status.

    Raises:
        SettingError: Nothing to restore, or a checkpoint that does not fit the model.
    """
    from bert_tf.training import run
    from bert_tf.training.trainer import RANDOM

    with reported(f"--init_checkpoint={init_checkpoint}: ", setting="init_checkpoint"):
        status = trainer.restore(init_checkpoint)
    if status.start == RANDOM:
        raise SettingError(f"--{run.nothing_to_restore(trainer.settings.output_dir)}", "init_checkpoint")
    return status


def log_results(results, title="Eval results"):
    """Logs `results` (name -> figure), one line each in name order, under `title`.

    Args:
        results: The figures.
        title: The heading line's words.
    """
    logging.info("***** %s *****", title)
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])
