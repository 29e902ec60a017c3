"""The flags that the scripts which are not fine-tuning share (pre-training, feature extraction),
generated from the library's settings groups (`bert_tf.training.groups`) with their names,
defaults and help: a flag they share with the fine-tuning scripts cannot differ from it. A
fine-tuning script defines all of its flags from its task's settings class
(`run_scripts/settings_flags.py`)."""

import sys

from run_scripts import settings_flags


def _caller():
    """The module that called the define_* function (absl lists the flags under it)."""
    name = sys._getframe(2).f_globals.get("__name__", "")
    return sys.argv[0] if name == "__main__" else name


def define_run_flags():
    """The flags the original's training scripts share, as run_pretraining has them: the starting
    checkpoint and config, the output folder, the length, the actions, the batch sizes (one
    number each), the learning rate and the checkpoints' and loops' steps."""
    from bert_tf.training import groups

    module = _caller()
    settings_flags.define_flags(groups.Sources, names=("bert_config_file", "init_checkpoint"), mark_required=False,
                                module=module)
    run = ("output_dir", "max_seq_length", "do_train", "train_batch_size", "learning_rate", "save_checkpoints_steps",
           "iterations_per_loop")
    settings_flags.define_flags(groups.RunSettings, names=run, searchable=False, mark_required=False, module=module)
    settings_flags.define_flags(groups.Evaluation, module=module)


def define_tpu_flags():
    from bert_tf.training import groups

    settings_flags.define_flags(groups.Tpu, module=_caller())


def define_training_flags():
    """The flags every training script adds to the original's (one definition for all)."""
    from bert_tf.training import groups

    settings_flags.define_flags(groups.Training, module=_caller())


def define_padding_flags(training=True):
    """--length_bucket, --pad_to_max_seq_length and, for a script that trains, --group_by_length
    and --skip_padding."""
    from bert_tf.training import groups

    names = None if training else ("length_bucket", "pad_to_max_seq_length")
    settings_flags.define_flags(groups.Padding, names=names, module=_caller())
