"""The life of a fine-tuning run in its output folder: checking that the folder holds nothing or
this run's earlier self, leaving the run record, config and vocab beside the first checkpoint,
and training, resuming or restoring the model (TensorFlow).

Errors are ValueErrors whose message starts with the setting at fault (`output_dir=...`,
`do_lower_case=...`), so that a script can put `--` in front and name its flag.
"""

import os
import shutil

import tensorflow as tf

from bert_tf.checkpoints import hf
from bert_tf.config import BertConfig
from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write
from bert_tf.runs import record as run_record
from bert_tf.runs.record import RunRecord
from bert_tf.training.settings import check_epochs
from bert_tf.training.trainer import RANDOM, RestoreStatus

# A run resumed in its folder (training again) may change only what takes no part in its steps:
# num_train_epochs (to train further: the schedule then spans the new total, and the steps taken
# stay as they were), the evaluation and prediction batch sizes, the checkpoints' frequency and
# count, XLA, the padding cut, the progress display and the actions. Every other setting of its
# record's `training` must be given again as it was, or the model would mix steps taken two ways.
RESUMABLE_CHANGES = ("num_train_epochs", "eval_batch_size", "predict_batch_size", "save_checkpoints_steps",
                     "keep_checkpoints", "jit_compile", "length_bucket", "skip_padding")


def check_earlier_run(output_dir, record: RunRecord, same, config: BertConfig | None = None,
                      config_setting="bert_config_file", vocab_file=None, training=None):
    """What `output_dir` holds must be this run's: nothing, or a run record whose fields `same`
    equal `record`'s, with the same casing and, where it has checkpoints, the same `config` as
    its bert_config.json (`config_setting` names where `config` came from); another run's
    checkpoints would be resumed with the wrong head or shapes, or fail late. Checked before any
    work (that the folder can be written is `io_utils.check_output_dir`'s to say). Training again
    with the settings `training` (name -> value) must give those the earlier run kept in its
    `run_record.TRAINING_FILE` (RESUMABLE_CHANGES aside), and `vocab_file` (when given) must hold
    the tokens of the folder's vocab.txt. A folder
    holding another program's model is refused (`run_record.check_not_other_model`). Returns
    warnings (a different max_seq_length: inputs are cut differently)."""
    previous = run_record.read(output_dir) if os.path.isdir(output_dir) else None
    run_record.check_not_other_model(output_dir, ours=previous is not None or run_record.is_search(output_dir))
    if previous is None:
        if os.path.isdir(output_dir) and tf.train.latest_checkpoint(output_dir):
            raise ValueError(
                f"{shown.output_dir}={output_dir} holds checkpoints of another kind of run (no "
                f"{run_record.FILE_NAME}): "
                f"use another {shown.output_dir} (to start from those weights, pass "
                f"{shown.init_checkpoint}={output_dir})"
            )
        return []
    for name in same:
        # A field the earlier run's kind does not keep: that run is of another kind, which is said.
        name = name if hasattr(previous, name) else "kind"
        if getattr(previous, name) != getattr(record, name):
            detail = f" with {shown(name)} {_shown(getattr(previous, name))}" if name != "task_name" else ""
            raise ValueError(
                f"{shown.output_dir}={output_dir} holds a run of task {previous.task_name!r}{detail}, not "
                f"{_shown(getattr(record, name))}: use another {shown.output_dir}"
            )
    if _lora(previous) != _lora(record):
        raise ValueError(
            f"{_lora(record)}, but the model in {shown.output_dir}={output_dir} was fine-tuned with {_lora(previous)}: "
            f"its checkpoints hold those adapters (or none); give the same, or use another {shown.output_dir}"
        )
    if previous.do_lower_case != record.do_lower_case:
        raise ValueError(
            f"{shown.do_lower_case}={record.do_lower_case}, but the model in {shown.output_dir}={output_dir} "
            f"was fine-tuned with "
            f"{shown.do_lower_case}={previous.do_lower_case}"
        )
    _check_same_config(output_dir, config, config_setting)
    if vocab_file:  # a vocabulary of the same size would give other features without an error
        hf.check_same_vocab(vocab_file, output_dir)
    warnings = check_resumed_settings(output_dir, training) if training else []
    if previous.max_seq_length != record.max_seq_length:
        warnings.append(
            f"{shown.max_seq_length}={record.max_seq_length}, but the model in {output_dir} was fine-tuned with "
            f"{previous.max_seq_length}: inputs are cut differently"
        )
    return warnings


def check_resumed_settings(output_dir, training, resumable=RESUMABLE_CHANGES):
    """Checks a run that trains in `output_dir` against the settings that decided its earlier steps.

    Args:
        output_dir: The run's folder.
        training: name -> value of the settings that decide the steps, as this run takes them.
        resumable: The settings that may change on resume, named in the error.

    Returns:
        Warnings: one when the folder has checkpoints but no `run_record.TRAINING_FILE` (written
        by an earlier version), whose settings cannot be checked.

    Raises:
        ValueError: Naming the first setting whose value differs from the earlier run's, where
            that run took a step (it has a checkpoint): a run stopped before its first one
            leaves nothing to resume, and its rerun may correct any setting.
    """
    if not tf.train.latest_checkpoint(output_dir):
        return []
    earlier = run_record.read_training_settings(output_dir)
    changed = earlier is not None and run_record.changed_setting(earlier, training)
    if changed:
        name, before, given = changed
        raise ValueError(
            f"{shown(name)}={_shown(given)}, but the run in {shown.output_dir}={output_dir} was trained with "
            f"{shown(name)}={_shown(before)}: a resumed run takes its steps as its first steps were taken; give "
            f"the same, or use another {shown.output_dir} (what may change on resume: "
            f"{', '.join(map(shown, resumable))})"
        )
    if earlier is None:
        return [f"the run in {output_dir} has no {run_record.TRAINING_FILE} (written by an earlier version): "
                "that this run resumes it with the same settings cannot be checked"]
    return []


def _check_same_config(output_dir, config, setting):
    """`config` against the bert_config.json beside `output_dir`'s checkpoints (those a resumed or
    restored run reads): the first field of what the model computes that differs, named
    (`BertConfig.forward_differences`)."""
    path = os.path.join(output_dir, "bert_config.json")
    if config is None or not os.path.isfile(path) or not tf.train.latest_checkpoint(output_dir):
        return
    theirs = BertConfig.from_json_file(path)
    differ = config.forward_differences(theirs)
    if differ:
        name = differ[0]
        raise ValueError(
            f"{setting}: its {name} is {getattr(config, name)!r}, but the model in "
            f"{shown.output_dir}={output_dir} was "
            f"fine-tuned with {getattr(theirs, name)!r} ({path}): give that config, or use another {shown.output_dir}"
        )


def _lora(record):
    alpha = f", {shown.lora_alpha}={record.lora_alpha}" if record.lora_rank else ""
    return f"{shown.lora_rank}={record.lora_rank}{alpha}"


def _shown(value):
    return repr(list(value) if isinstance(value, tuple) else value)


def write_run_files(output_dir, record: RunRecord, config: BertConfig, vocab_file, training=None):
    """What an export or a later run needs to read the model in `output_dir`: the settings that
    decided its steps (`training`, when given: `run_record.TRAINING_FILE`), the run record,
    bert_config.json and vocab.txt (each written atomically)."""
    if training is not None:
        run_record.write_training_settings(output_dir, training)
    record.write(output_dir)
    config.to_json_file(os.path.join(output_dir, "bert_config.json"))
    vocab = os.path.join(output_dir, "vocab.txt")
    if os.path.abspath(vocab_file) != os.path.abspath(vocab):
        with open(vocab_file, "rb") as src, atomic_write(vocab, "wb") as dst:
            shutil.copyfileobj(src, dst)


def has_model(output_dir, init_checkpoint):
    """Whether a run that does not train has weights to evaluate or predict with."""
    return bool(init_checkpoint) or (os.path.isdir(output_dir) and bool(tf.train.latest_checkpoint(output_dir)))


def nothing_to_restore(output_dir):
    return ValueError(
        f"output_dir={output_dir} has no checkpoint and no init_checkpoint was given: nothing to "
        "evaluate or predict with (train first, or initialise from a trained model)"
    )


def restore_trained(trainer, init_checkpoint) -> RestoreStatus:
    """Without training: the output folder's latest checkpoint, else `init_checkpoint`; there
    being neither is an error (a random model would be evaluated without a word)."""
    status = trainer.restore(init_checkpoint)
    if status.start == RANDOM:
        raise nothing_to_restore(trainer.settings.output_dir)
    return status


def train_or_restore(
    trainer, train_data, do_train, init_checkpoint, write_files, on_log=None, on_start=None
) -> RestoreStatus:
    """Trains (`do_train`) or restores (`restore_trained`). Training calls `write_files()` (e.g.
    `write_run_files` for this run) after the first step, before the first checkpoint, on the
    chief only: every checkpoint has its record beside it, and a run that fails to start leaves
    nothing. `on_log(step, logs)` sees every logged step; `on_start()` is called before the first
    (the model ready: e.g. to report `trainer.parameters()`)."""
    if not do_train:
        return restore_trained(trainer, init_checkpoint)
    status, _ = trainer.train(train_data, init_checkpoint, on_log=writing_first(trainer, write_files, on_log),
                              on_start=on_start)
    return status


def writing_first(trainer, write_files, on_log=None):
    """An `on_log` for `trainer.train` that calls `write_files()` at the first logged step.

    After the first step, so that a run that fails to start leaves nothing a corrected rerun is
    held to; before the first checkpoint, so that every checkpoint has the files beside it. The
    chief only writes.

    Args:
        trainer: The Trainer (its `is_chief`).
        write_files: A function of no argument.
        on_log: None, or the `on_log(step, logs)` called after it at every logged step.

    Returns:
        The `on_log(step, logs)` to pass to `trainer.train`.
    """
    written = []

    def log(step, logs):
        if not written and trainer.is_chief:
            write_files()
            written.append(True)
        if on_log is not None:
            on_log(step, logs)

    return log


def training_steps(num_examples, train_batch_size, num_train_epochs, warmup_proportion):
    """The original's (num_train_steps, num_warmup_steps): examples / batch x epochs, and that
    share of them warming up. A count of epochs that is negative, NaN or infinite is a ValueError
    naming it (it would otherwise surface as a negative warmup, or an integer error)."""
    check_epochs(num_train_epochs)
    steps = int(num_examples / max(train_batch_size, 1) * num_train_epochs)
    return steps, int(steps * warmup_proportion)


def __getattr__(name):
    """Names this module held before, as deprecated aliases (see `bert_tf/_deprecated.py`)."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
