"""The one fine-tuning driver: `fine_tune(settings)` runs any registered task (`bert_tf.runs.registry`)
through the same steps, its own parts supplied by its `bert_tf.tasks.contract.FineTuning`: read and
check every input, the run record (and the fields an earlier run must share), the task, train or
restore, evaluate, predict; one run, or a search over several values of `learning_rate`,
`train_batch_size` or `num_train_epochs` (`bert_tf.training.search`).

A bad setting raises `bert_tf.errors.SettingError` before any work; a model whose outputs turn NaN
or Inf raises `bert_tf.training.divergence.Diverged`.
"""

import dataclasses
import os

from absl import logging

from bert_tf.errors import SettingError, reported, written_as_flags
from bert_tf.fields import RUN, SEARCH, field_meta, shared_fields
from bert_tf.tasks import distillation
from bert_tf.tasks.settings import Windows
from bert_tf.training import prepare

__all__ = ["FineTuningResult", "fine_tune"]


@dataclasses.dataclass(frozen=True)
class FineTuningResult:
    """What `fine_tune` returns.

    Attributes:
        results: The dev figures of the run (of the chosen run, for a search), or None where it
            did not evaluate.
        output_dir: The run's folder (the search's, for a search).
        chosen: For a search, the chosen run's folder; None for one run.
        search: For a search, its `bert_tf.training.search.SearchResult`; None for one run.
    """

    results: dict | None
    output_dir: str
    chosen: str | None = None
    search: object = None


def fine_tune(settings):
    """Fine-tunes, evaluates and predicts as `settings` say: one run, or a search.

    The run trains when `do_train` (resuming the latest checkpoint in `output_dir`), evaluates
    when `do_eval` and predicts when `do_predict`, with the checks, files and guarantees of the
    task's script. Several values in `learning_rate`, `train_batch_size` or `num_train_epochs`
    (a tuple, or a comma-separated string), or `restarts` above 1, make a search.

    Args:
        settings: A task's settings: `bert_tf.tasks.<kind>.Settings` (classifier, squad, ner,
            swag, embedder) or a registered task's.

    Returns:
        A FineTuningResult.

    Raises:
        SettingError: A setting that cannot be used, before any work.
        bert_tf.training.divergence.Diverged: The model's loss or outputs were NaN or Inf.
    """
    from bert_tf.runs import registry

    name = getattr(type(settings), "kind", "")
    kind = registry.get(name) if name else None
    if kind is None:
        raise SettingError(f"{type(settings).__name__} names no task kind: give a task's Settings "
                           "(bert_tf.tasks.classifier.Settings, ...)")
    with reported():
        task_class = kind.fine_tuning_class()
    task_class.kind = kind.name
    return run_or_search(settings, task_class)


def run_once(job):
    """The steps of one run of `job` (a FineTuning holding its settings), in the contract's order.
    Returns the dev figures, or None."""
    from bert_tf.training.trainer import Trainer

    with reported():
        job.check_given()
    if job.settings.transfer_file and not job.reads_transfer:
        raise SettingError(f"--transfer_file is not offered for task kind {job.kind}: its transfer inputs are not "
                           "read yet (drop --transfer_file: --teacher alone distills on the training inputs)",
                           "transfer_file")
    config = check_fine_tuning(job, job.actions)
    with reported():
        job.check(config)
    f = job.settings
    length_bucket, group_by_length = prepare.padding(f)
    with reported():
        job.read_inputs(config)  # every input is read and checked before any training
    with reported():
        record = distillation.recorded(job.record(group_by_length), f, job.teacher)
    if job.teacher is not None:
        distillation.check_record(job.teacher, record, job.teacher_fields())
    training = resume_settings(f, type(job)) if f.do_train else None  # kept: a resumed run must give them again
    with reported():
        same = job.fields_to_match(f.do_train)
    check_run_output_dir(f, record, same, config, training)
    with reported():
        job.check_run(record)
    strategy = prepare.strategy(f)  # before TensorFlow runs an op (a tokenizer's)
    prepare.check_batch_sizes(f, strategy.num_replicas_in_sync)
    with reported():
        task = distillation.distilled(job.build_task(config, record, length_bucket), f, job.teacher, record,
                                      strategy.num_replicas_in_sync)
    with reported():
        job.num_train_examples = job.encode(task)
    settings, num_train_steps = fine_tuning_settings(f, job.num_train_examples, length_bucket, job.loss_reads_padding)
    with reported():
        trainer = Trainer(task, settings, strategy)
    logging.info("%s; strategy %s with %d replica(s)", job.describe(), prepare.strategy_name(f),
                 strategy.num_replicas_in_sync)
    models = distillation.describe(trainer)
    if models:
        logging.info("%s", models)
    if f.do_train:
        logging.info("***** Running training: %s, batch size %d, %d steps *****", job.training_examples(),
                     f.train_batch_size, num_train_steps)
    fields = {**job.progress_fields, **({"distill": "distill_loss"} if job.teacher else {})}
    with reported():
        data = distillation.train_data(trainer, job.train_data()) if f.do_train else None
    train_or_restore(trainer, f, data, record, config, fields, training)
    results = None
    if "do_eval" in job.actions and f.do_eval:
        results = job.evaluate(trainer)
        prepare.log_results(results)
    if f.do_predict:
        predicted = job.predict(trainer)
        results = predicted if results is None and isinstance(predicted, dict) else results
    logging.info("Checkpoints and TensorBoard logs: %s", f.output_dir)
    return results


# The original scripts' words, run_classifier's unmatched closing quote included.
_NOTHING_TO_DO = {
    ("do_train", "do_eval", "do_predict"): "At least one of `do_train`, `do_eval` or `do_predict' must be True.",
    ("do_train", "do_predict"): "At least one of `do_train` or `do_predict` must be True.",
}


def check_fine_tuning(job, actions=("do_train", "do_eval", "do_predict")):
    """What a fine-tuning run checks before reading any input: something to do, the LoRA settings
    (the rank below the model's widths), the casing against the checkpoint's name, the config (a
    Hugging Face folder's: `prepare.resolve_sources`, which sets `job.settings` to what the
    starting checkpoint implies), max_seq_length against it, warmup_proportion, a model to restore
    when not training. Splits the CPU as `num_cpu_devices` asks (before TensorFlow starts).
    Returns the BertConfig."""
    from bert_tf import tokenization
    from bert_tf.checkpoints import sources
    from bert_tf.training import settings

    f = job.settings
    if not any(getattr(f, name) for name in actions):
        listed = ", ".join(f"`{name}`" for name in actions)
        raise SettingError(_NOTHING_TO_DO.get(tuple(actions)) or f"At least one of {listed} must be True.", "do_train")
    prepare.split_cpu(f)
    prepare.lora(f)
    with reported(setting="do_lower_case"):
        tokenization.validate_case_matches_checkpoint(f.do_lower_case, f.init_checkpoint)
    job.settings, config = prepare.resolve_sources(f)
    job.settings, config, job.teacher = distillation.resolve(job.settings, config, job.kind,
                                                             lambda name: name in f.given)
    f = job.settings
    config = config or prepare.load_config(f.bert_config_file)
    if f.max_seq_length < 3:  # BertPackInputs' floor, said before any input is read
        raise SettingError(f"--max_seq_length={f.max_seq_length} leaves no room for a text: [CLS] A [SEP] needs 3 "
                           "positions", "max_seq_length")
    with reported(f"--max_seq_length={f.max_seq_length} vs max_position_embeddings of "
                  f"--{sources.config_setting(f.bert_config_file, f.init_checkpoint)}: ", setting="max_seq_length"):
        config.check_seq_length(f.max_seq_length)
    if f.lora_rank:
        from bert_tf.models import lora

        with reported(flag_names=("lora_rank",)):
            lora.check_rank(f.lora_rank, config.hidden_size, config.intermediate_size)
    if not 0.0 <= f.warmup_proportion <= 1.0:
        raise SettingError(f"--warmup_proportion={f.warmup_proportion} must be between 0 and 1", "warmup_proportion")
    if f.do_train:
        with reported(flag_names=("learning_rate", "num_train_epochs", "do_train")):
            settings.check_schedule(f.learning_rate, f.num_train_epochs)
    if job.teacher is not None:
        job.check_teacher(config, job.teacher)
    if isinstance(f, Windows):  # the tasks that read long texts as windows
        check_windows_settings(f)
    prepare.check_output_dir(f.output_dir)
    if not f.do_train:
        prepare.check_trained_model(f)
    return config


def check_windows_settings(settings):
    """The windows of long texts (`bert_tf.tasks.settings.Windows`): in range; not on a TPU, whose
    programs take one shape (a batch's windows vary); logged where XLA compiles a program per
    window count; and, for a run that only evaluates or predicts from a run that read other
    windows, said."""
    from bert_tf.preprocessing.text_windows import check_windows
    from bert_tf.runs import record as run_record

    f = settings
    with reported(flag_names=("max_windows", "doc_stride", "max_seq_length")):
        check_windows(f.max_windows, f.window_stride(), f.max_seq_length)
    if f.max_windows == 1:
        idle = [name for name in ("doc_stride", "window_pooling") if name in f.given]
        if idle:
            logging.warning("%s: read only with --max_windows above 1; this run cuts its texts",
                            " and ".join(f"--{name}" for name in idle))
        earlier = None
        if not f.do_train and (f.init_checkpoint or f.output_dir):
            folder = run_record.run_directory(f.init_checkpoint or f.output_dir)
            earlier = run_record.read(folder) if os.path.isdir(folder) else None
        if getattr(earlier, "max_windows", 1) > 1:
            logging.warning("The run in %s read up to --max_windows=%d windows of a text; this run reads one and cuts "
                            "longer texts (give --max_windows to read them as it did)", folder, earlier.max_windows)
        return
    if f.use_tpu:
        raise SettingError(f"--max_windows={f.max_windows} is not offered with --use_tpu: a batch's windows vary in "
                           "number, and a TPU program takes one shape", "max_windows")
    if f.jit_compile:
        logging.warning("--max_windows=%d with --jit_compile: XLA compiles a program for each number of windows a "
                        "batch holds", f.max_windows)


def check_run_output_dir(settings, record, same, config=None, training=None):
    """`output_dir` must hold nothing, or a run of this task (`same`: the record fields that
    must match) and of `config`, trained with `training` (`resume_settings`: None when this run
    does not train); warnings are logged."""
    from bert_tf.checkpoints.sources import config_setting
    from bert_tf.training import run

    f = settings
    names = ("output_dir", "init_checkpoint", "do_lower_case", "max_seq_length", "lora_rank", "lora_alpha",
             "vocab_file", *(name for name in training or () if hasattr(f, name)), *run.RESUMABLE_CHANGES)
    with reported(flag_names=(*names, "bert_config_file"), setting="output_dir"):
        given = config_setting(f.bert_config_file, f.init_checkpoint)
        warnings = run.check_earlier_run(f.output_dir, prepare.lora(f, record), same, config, given, f.vocab_file,
                                         training)
    for warning in warnings:  # written within the check, with its settings as flags
        logging.warning("%s", warning)


def fine_tuning_settings(settings, num_train_examples, length_bucket, loss_reads_padding=False):
    """`(TrainingSettings, num_train_steps)`: the original's steps (examples / train_batch_size x
    epochs) and warmup, whether padding is skipped (`skip_padding`, unset: the default for the
    batches' `length_bucket`, off where the task's loss reads the padding positions' outputs;
    logged); training with no step is an error."""
    from bert_tf.training import run, speed
    from bert_tf.training import settings as checks
    from bert_tf.training.trainer import TrainingSettings

    f = settings
    with reported("--"):
        steps, warmup = run.training_steps(num_train_examples, f.train_batch_size, f.num_train_epochs,
                                           f.warmup_proportion)
    training = prepare.loop_settings(
        TrainingSettings, f, predict_batch_size=f.predict_batch_size, num_train_steps=max(steps, 1),
        num_warmup_steps=warmup, **prepare.lora(f),
    )
    skip, platform = f.skip_padding, speed.current_platform(f.use_tpu)
    if skip is None:
        skip = not loss_reads_padding and checks.default_skip_padding(length_bucket, training.jit_compile, platform)
        logging.info("skip_padding=%s: the default with length_bucket=%s, jit_compile=%s on %s%s", skip, length_bucket,
                     training.jit_compile, platform, ", a loss over the padding positions" * loss_reads_padding)
    with reported("--"):
        training = dataclasses.replace(training, skip_padding=skip)
    if f.do_train and steps < 1:
        raise SettingError(
            f"{num_train_examples} training examples / --train_batch_size={f.train_batch_size} x "
            f"--num_train_epochs={f.num_train_epochs} gives no training step", "num_train_epochs")
    return training, steps


def train_or_restore(trainer, settings, train_data, record, config, fields, training=None):
    """`do_train`: trains, the run's files (its `training` settings among them) written beside the
    first checkpoint; otherwise restores the output_dir's latest checkpoint or `init_checkpoint`.
    `fields`: the progress bar's label -> log key."""
    from bert_tf.training import run

    f = settings
    if not f.do_train:
        status = prepare.restore(trainer, f.init_checkpoint)
        if status.not_found:
            logging.warning("The task head is not in %s: its outputs are untrained", f.init_checkpoint)
        logging.info("Model %s", status)
        return status
    return prepare.with_progress(
        trainer, f, fields,
        lambda progress: run.train_or_restore(
            trainer, train_data, True, f.init_checkpoint,
            lambda: run.write_run_files(f.output_dir, prepare.lora(f, record), config, f.vocab_file, training),
            progress,
            on_start=lambda: logging.info("%s", trainer.parameters()),
        ),
    )


# The grid's own settings, written as flags in the messages about them.
_GRID = ("output_dir", "random_seed", "learning_rate", "train_batch_size", "num_train_epochs", "restarts")


def run_or_search(settings, task_class):
    """One run of `task_class` with `settings`; for a search (several values, restarts > 1:
    `bert_tf.training.search`) one run per grid point, each with its settings and subfolder
    (`dataclasses.replace`), then `do_predict` with the chosen run, by the figures of the task's
    `evaluation` action. Training needs a process that can train (`check_weights_may_change`),
    checked before anything is read or written. Returns a FineTuningResult."""
    from bert_tf.training import search
    from bert_tf.training import settings as checks

    f, evaluation = settings, task_class.evaluation
    if f.do_train:
        with reported():
            checks.check_weights_may_change()
    with reported(flag_names=_GRID):
        runs = search.grid(f.learning_rate, f.train_batch_size, f.num_train_epochs, f.restarts, f.random_seed)

    figures = {}  # run folder -> the dev figures of a run made by this call

    def one_run(one, output_dir, **actions):
        values = dict(output_dir=output_dir, random_seed=one.seed, learning_rate=one.learning_rate,
                      train_batch_size=one.train_batch_size, num_train_epochs=one.num_train_epochs, **actions)
        with written_as_flags():  # the run names its own settings, not the search's
            results = run_once(task_class(dataclasses.replace(f, **values)))
        if results is not None:  # not the chosen run's prediction after the search
            figures[output_dir] = results
        return results

    if not search.is_search(runs):
        with reported(flag_names=_GRID):
            search.check_not_search_folder(f.output_dir)
        if f.do_train:
            with reported(flag_names=_GRID):
                search.check_not_search_run(f.output_dir)
        return FineTuningResult(one_run(runs[0], f.output_dir), f.output_dir)
    if not (f.do_train and getattr(f, evaluation)):
        raise SettingError(f"a search (a list in --learning_rate, --train_batch_size or --num_train_epochs, or "
                           f"--restarts>1) needs --do_train and --{evaluation}: it chooses its run by the dev "
                           "figures", evaluation)
    predict, each = f.do_predict and evaluation != "do_predict", {"do_predict": evaluation == "do_predict"}
    shared = search_settings(f, task_class)
    with reported(flag_names=_GRID + tuple(shared)):
        done = search.search(
            f.output_dir, runs, f.random_seed, lambda one, run_dir: one_run(one, run_dir, **each),
            lambda message: logging.info("***** Search: %s *****", message), shared)
    if predict:
        one_run(done.chosen.run, done.chosen.run_dir, do_train=False, do_eval=False, do_predict=True)
    chosen = done.chosen
    # The chosen run's figures as its run returned them; from its eval_results.txt where an
    # earlier call made it.
    results = figures.get(chosen.run_dir) or search.read_results(chosen.run_dir)
    return FineTuningResult(results, f.output_dir, chosen.run_dir, done)


def _paths(settings_class):
    return [name for name in shared_fields(settings_class, SEARCH) if field_meta(settings_class, name).get("path")]


def resume_settings(settings, task_class):
    """`{setting: value}` of the settings that decide a training run's steps, as its record keeps
    them: those every run of a search shares (`search_settings`: the starting checkpoint, the data,
    the lengths, the optimizer, ...), those marked `RUN` (learning rate, batch size, seed) and the
    CPU kernels (`bert_tf.kernels`). The vocabulary and the config are compared by what they hold,
    not by their paths (`bert_tf.training.run.check_earlier_run`)."""
    from bert_tf import kernels

    paths = _paths(type(settings))
    values = {name: os.path.realpath(value) if name in paths and value else value  # a link is its target
              for name, value in _shared_values(settings, task_class).items()
              if not field_meta(type(settings), name).get("compared_by_content")}
    own = {name: getattr(settings, name) for name in shared_fields(type(settings), RUN)}
    # The CPU kernels too: oneDNN's and Eigen's round differently, so a resume on the others is not exact.
    return {**values, **own, kernels.VARIABLE: kernels.setting()}


def search_settings(settings, task_class):
    """`{setting: value}` of the settings every run of a search shares (the fields marked `SEARCH`),
    as its runs will take them: the casing a Hugging Face folder given as `init_checkpoint` has,
    paths made absolute, LoRA's alpha resolved, then the task's `shared_settings`; in the order
    of the fields' `order`."""
    return _shared_values(prepare.resolve_sources(settings)[0], task_class)


def _shared_values(settings, task_class):
    """`search_settings` of settings whose sources are resolved already (a run's, in `run_once`)."""
    names = shared_fields(type(settings), SEARCH)
    values = {name: getattr(settings, name) for name in names}
    values.update(prepare.lora(settings))
    for name in _paths(type(settings)):
        if values.get(name):
            values[name] = os.path.abspath(values[name])
    return task_class.shared_settings(values)
