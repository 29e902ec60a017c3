"""Flags -> the library's settings, and the checks and error lines every script shares: a bad
value is one line naming the flag (`fail`), a library error one line too (`library_call`)."""

import os
import sys

from absl import logging

from bert_tf.tasks.contract import UsageError, as_flags, named  # noqa: F401 - as_flags: the scripts write library messages with it


def fail(message):
    """Stops the script with exit code 1 and one clear line (no flag help dump)."""
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def library_call(work, prefix="", flag_names=()):
    """`work()`, with a library error (its message starts with the setting at fault, or says
    what is wrong) as one line; `prefix` names the flag or file when the message does not, and
    the settings `flag_names` are written as flags (`as_flags`). A UsageError's message is the line."""
    try:
        return named(work, prefix, flag_names)
    except UsageError as e:
        fail(str(e))


def load_bert_config(path, flag="bert_config_file"):
    """The BertConfig at `path`, or a one-line error naming the flag."""
    from bert_tf.checkpoints import sources

    config, warnings = library_call(lambda: sources.read_config(path, flag), "--")
    for warning in warnings:  # e.g. a misspelt key: one log line each, not Python's two
        logging.warning("--%s", warning)
    return config


def strategy_name(flag_values):
    from bert_tf.training import distribution

    return flag_values.distribution_strategy or distribution.default_strategy_name(
        flag_values.use_tpu, flag_values.num_gpus, flag_values.num_cpu_devices
    )


def strategy_from_flags(flag_values):
    """The mixed-precision policy and the tf.distribute strategy the flags ask for, or a clear
    error naming the flags. `distribution.split_cpu(flag_values.num_cpu_devices)` must have run
    first, before TensorFlow started."""
    import keras
    import tensorflow as tf

    from bert_tf.training import distribution

    tf.get_logger().setLevel("WARNING")  # tf.distribute logs every cross-device reduction
    policies = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
    if flag_values.mixed_precision in policies:
        keras.mixed_precision.set_global_policy(policies[flag_values.mixed_precision])
    name = strategy_name(flag_values)
    # Strategies (collective ops in particular) must exist before TensorFlow runs any op.
    f = flag_values
    try:
        return distribution.create_strategy(
            name, f.num_gpus, f.num_cpu_devices, f.tpu_name or f.master, f.tpu_zone, f.gcp_project
        )
    except Exception as e:  # noqa: BLE001 - every way of not reaching a TPU/cluster ends here
        where = ""
        if name == "tpu":
            where = (
                f" (no TPU reachable at tpu_name={f.tpu_name!r}, master={f.master!r}, "
                f"tpu_zone={f.tpu_zone!r}, gcp_project={f.gcp_project!r})"
            )
        fail(f"--distribution_strategy={name}{where}: {e}")


def tpu_strategy(flag_values):
    """A TPUStrategy for --use_tpu, or a clear error naming the flags when no TPU is reachable."""
    from bert_tf.training import distribution

    f = flag_values
    try:
        return distribution.create_strategy("tpu", 0, 0, f.tpu_name or f.master, f.tpu_zone, f.gcp_project)
    except Exception as e:  # every way of not reaching a TPU ends here
        fail(
            f"--use_tpu is set but no TPU is reachable (tpu_name={f.tpu_name!r}, master={f.master!r}, "
            f"tpu_zone={f.tpu_zone!r}): {e}"
        )


def steps_per_execution(f):
    return f.steps_per_execution or (f.iterations_per_loop if strategy_name(f) == "tpu" else 1)


def settings_or_fail(settings_class, flag_values, **values):
    """The loop's settings (`TrainingSettings` or a subclass): the flags every training script
    has, plus `values`; a bad value is a one-line error naming the flag."""
    from bert_tf import kernels
    from bert_tf.training.speed import choose_jit_compile

    f = flag_values
    logging.info("%s", kernels.describe())  # chosen before TensorFlow loaded (run_scripts/__init__.py)
    jit = log_jit_choice("jit_compile", choose_jit_compile(f.jit_compile, use_tpu=strategy_name(f) == "tpu"))
    shared = dict(
        output_dir=f.output_dir, train_batch_size=f.train_batch_size, eval_batch_size=getattr(f, "eval_batch_size", 8),
        learning_rate=f.learning_rate, save_checkpoints_steps=f.save_checkpoints_steps, optimizer=f.optimizer,
        gradient_accumulation_steps=f.gradient_accumulation_steps, steps_per_execution=steps_per_execution(f),
        keep_checkpoints=f.keep_checkpoints, jit_compile=jit, seed=f.random_seed,
    )
    try:
        return settings_class(**shared, **values)
    except ValueError as e:
        fail(f"--{e}")  # the messages start with the setting's name, the flag's


def lora_from_flags(flag_values, record=None):
    """`{lora_rank, lora_alpha}` of the flags (alpha resolved; a bad value is a one-line error
    naming the flag), or `record` (a RunRecord) with them."""
    import dataclasses

    from bert_tf.training.settings import lora_settings as checked

    f = flag_values
    values = library_call(lambda: checked(f.lora_rank, f.lora_alpha), flag_names=("lora_rank", "lora_alpha"))
    return values if record is None else dataclasses.replace(record, **values)


def bert_module_from_flags(flag_values, name="init_checkpoint"):
    """With --`name` a sentence-transformers folder: its modules checked before any work (what
    bert_tf cannot compute is refused in one line naming it), and the flag set to the folder of its
    BERT module (the folder itself, or the subfolder older sentence-transformers save it in), a
    Hugging Face folder; any other value is left as it is."""
    from bert_tf.checkpoints import sentence_transformers

    path = flag_values[name].value
    setattr(flag_values, name, library_call(lambda: sentence_transformers.bert_module_folder(path), f"--{name}: "))


def hf_folder_flags(f):
    """With --init_checkpoint a Hugging Face folder: sets --vocab_file and --do_lower_case (when the
    script has them) to the folder's, returns its BertConfig (`hf.folder_settings`); else None, the
    files and casing not given taken from beside the checkpoint (`sources.files_beside`)."""
    from bert_tf.checkpoints import hf, sources

    given = {name: f[name].value for name in ("vocab_file", "do_lower_case") if name in f and f[name].present}
    if not hf.is_hf_folder(f.init_checkpoint):
        kept = {name: f[name].value for name in ("vocab_file", "bert_config_file") if name in f}
        found = library_call(lambda: sources.files_beside(f.init_checkpoint, do_lower_case=given.get(
            "do_lower_case"), **kept), flag_names=("do_lower_case", "vocab_file"))
        for name in {"vocab_file", "bert_config_file", "do_lower_case"} & set(f):
            setattr(f, name, found[name])
        return None
    config = load_bert_config(f.bert_config_file) if f.bert_config_file else None
    found = library_call(
        lambda: hf.folder_settings(f.init_checkpoint, config, f.bert_config_file, "vocab_file" in f, **given), "--"
    )
    for name in {"vocab_file", "do_lower_case"} & set(f):
        setattr(f, name, getattr(found, name))
    return found.config


def padding_from_flags(flag_values):
    """`(length_bucket, group_by_length)`: the batches' bucket (None: fixed shapes, asked or on a TPU)
    and whether training batches are grouped by length. Unset, the bucket follows the XLA choice (logged):
    --jit_compile's, else Keras' (predict compiles on a GPU). A bad value: one line naming the flag."""
    from bert_tf.training import settings, speed

    f = flag_values
    if f.use_tpu and f["pad_to_max_seq_length"].present and not f.pad_to_max_seq_length:
        fail("--pad_to_max_seq_length=false is not possible with --use_tpu: TPUs need static shapes")
    fixed = f.pad_to_max_seq_length or f.use_tpu or ("distribution_strategy" in f and strategy_name(f) == "tpu")
    if fixed and f.length_bucket is not None:
        why = "--pad_to_max_seq_length" if f.pad_to_max_seq_length else "a TPU (static shapes)"
        fail(f"--length_bucket={f.length_bucket} has no use with {why}: every batch is padded to --max_seq_length")
    if f.length_bucket is not None and f.length_bucket > f.max_seq_length:
        fail(f"--length_bucket={f.length_bucket} is above --max_seq_length={f.max_seq_length}: no batch is longer; "
             "give at most that")
    auto = f.length_bucket is None and not fixed
    jit = auto and (library_call(lambda: speed.jit_compile_for(f.jit_compile), "--") if "jit_compile" in f
                    else speed.current_platform() == "gpu")
    grouped = "group_by_length" in f and f.group_by_length
    values = library_call(lambda: settings.padding_settings(f.length_bucket, fixed, grouped, jit), "--")
    if auto:
        logging.info("length_bucket=%d: the default %s XLA", values["length_bucket"], "with" if jit else "without")
    return values["length_bucket"], values["group_by_length"]


def log_jit_choice(flag, choice):
    """Logs an XLA setting resolved by bert_tf.training.speed (a JitChoice): its value and where it
    came from, after the warning of an unreadable speed file. Returns the value."""
    if choice.warning:
        logging.warning("%s", choice.warning)
    logging.info("%s=%s: %s", flag, choice.value, choice.source)
    return choice.value


def output_dir_from_flag(output_dir):
    """--output_dir must be a folder this process can write (not a file, nor under one)."""
    from bert_tf.io_utils import check_output_dir

    library_call(lambda: check_output_dir(output_dir))


def check_trained_model(flag_values):
    """Before any work, for a run that does not train: a model to restore must exist."""
    from bert_tf.training import run

    f = flag_values
    if not run.has_model(f.output_dir, f.init_checkpoint):
        fail(f"--{run.nothing_to_restore(f.output_dir)}")


def batch_sizes_from_flags(flag_values, replicas):
    """The batch sizes against the number of replicas (and accumulation steps), before any
    work: one line naming the flag."""
    from bert_tf.training.trainer import check_batch_sizes

    library_call(lambda: check_batch_sizes(flag_values, replicas), "--")


def train_with_progress(trainer, data, init_checkpoint, fields, flag_values):
    """`trainer.train` with a progress display, its errors as one line."""
    return with_progress(trainer, flag_values, fields, lambda p: trainer.train(data, init_checkpoint, on_log=p)[0])


def with_progress(trainer, flag_values, fields, work):
    """`work(progress)` (training) with a progress display; its errors as one line."""
    from bert_tf.training.progress import Progress

    f = flag_values
    progress = Progress(f.progress, trainer.settings.num_train_steps, f.iterations_per_loop, fields)
    try:
        status = library_call(lambda: work(progress))
    finally:
        progress.close()
    logging.info("Training %s; now at step %d", status, trainer.global_step)
    return status


def restore_from_flags(trainer, init_checkpoint):
    """Without training: the output_dir's latest checkpoint or --init_checkpoint, or an error."""
    from bert_tf.training import run
    from bert_tf.training.trainer import RANDOM

    status = library_call(lambda: trainer.restore(init_checkpoint), f"--init_checkpoint={init_checkpoint}: ")
    if status.start == RANDOM:
        fail(f"--{run.nothing_to_restore(trainer.settings.output_dir)}")
    return status


def log_results(results, title="Eval results"):
    logging.info("***** %s *****", title)
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])
