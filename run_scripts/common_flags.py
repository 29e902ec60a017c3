"""The flags that the scripts which still define them one by one share (feature extraction),
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




def define_tpu_flags():
    from bert_tf.training import groups

    settings_flags.define_flags(groups.Tpu, module=_caller())




def define_padding_flags(training=True):
    """--length_bucket, --pad_to_max_seq_length and, for a script that trains, --group_by_length
    and --skip_padding."""
    from bert_tf.training import groups

    names = None if training else ("length_bucket", "pad_to_max_seq_length")
    settings_flags.define_flags(groups.Padding, names=names, module=_caller())
