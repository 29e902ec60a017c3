"""The flags of the scripts that still read them directly (pre-training, feature extraction, export,
conversion) -> the library's settings, and the one error line every script prints: a
`bert_tf.errors.SettingError` (or another library error that names its setting) becomes
`script: error: message` (`fail`, `library_call`). The steps themselves are the library's
(`bert_tf.training.prepare`); these wrappers hand it the flags' values."""

import os
import sys
import types

from bert_tf.errors import SettingError, as_flags, named  # noqa: F401 - as_flags: the scripts write library messages with it


def fail(message):
    """Stops the script with exit code 1 and one clear line (no flag help dump)."""
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def at_the_edge(work):
    """`work()` (a script's one library call), its SettingError, or its model's NaN or Inf
    (a FloatingPointError), printed as the script's one error line; any other error keeps its
    traceback."""
    try:
        return work()
    except (SettingError, FloatingPointError) as e:
        fail(str(e))


def library_call(work, prefix="", flag_names=()):
    """`work()`, with a library error (its message starts with the setting at fault, or says
    what is wrong) as one line; `prefix` names the flag or file when the message does not, and
    the settings `flag_names` are written as flags (`as_flags`). A SettingError's message is the line."""
    try:
        return named(work, prefix, flag_names)
    except SettingError as e:
        fail(str(e))


def values(flag_values):
    """The flags' values as settings the library reads (`bert_tf.training.prepare`): an attribute
    per flag, and `given`, the flags the command line set. Settings pass as they are."""
    if not hasattr(flag_values, "flag_values_dict"):
        return flag_values
    names = list(flag_values)
    return types.SimpleNamespace(**{name: flag_values[name].value for name in names},
                                 given=frozenset(name for name in names if flag_values[name].present))


def _prepare():
    from bert_tf.training import prepare

    return prepare


def load_bert_config(path, flag="bert_config_file"):
    """The BertConfig at `path`, or a one-line error naming the flag."""
    return library_call(lambda: _prepare().load_config(path, flag))


def strategy_name_from_flags(flag_values):
    return _prepare().strategy_name(values(flag_values))


def strategy_from_flags(flag_values):
    """The mixed-precision policy and the tf.distribute strategy the flags ask for, or one line
    naming the flags. `distribution.split_cpu(flag_values.num_cpu_devices)` must have run first."""
    return library_call(lambda: _prepare().strategy(values(flag_values)))


def tpu_strategy_from_flags(flag_values):
    """A TPUStrategy for --use_tpu, or one line naming the flags when no TPU is reachable."""
    return library_call(lambda: _prepare().tpu_strategy(values(flag_values)))




def settings_or_fail(settings_class, flag_values, **more):
    """The loop's settings (`TrainingSettings` or a subclass): the flags every training script
    has, plus `more`; a bad value is a one-line error naming the flag."""
    return library_call(lambda: _prepare().loop_settings(settings_class, values(flag_values), **more))




def bert_module_from_flags(flag_values, name="init_checkpoint"):
    """With --`name` a sentence-transformers folder: its modules checked before any work (what
    bert_tf cannot compute is refused in one line naming it), and the flag set to the folder of its
    BERT module (the folder itself, or the subfolder older sentence-transformers save it in), a
    Hugging Face folder; any other value is left as it is."""
    from bert_tf.checkpoints import sentence_transformers

    path = flag_values[name].value
    setattr(flag_values, name, library_call(lambda: sentence_transformers.bert_module_folder(path), f"--{name}: "))


def hf_folder_flags(flag_values):
    """With --init_checkpoint a Hugging Face folder: sets --vocab_file and --do_lower_case (when the
    script has them) to the folder's, returns its BertConfig; else None, the files and casing not
    given set from beside the checkpoint (`bert_tf.training.prepare.resolve_sources`)."""
    resolved, config = library_call(lambda: _prepare().resolve_sources(values(flag_values)))
    for name in ("vocab_file", "bert_config_file", "do_lower_case"):
        if name in flag_values and getattr(resolved, name) != flag_values[name].value:
            setattr(flag_values, name, getattr(resolved, name))
    return config


def padding_from_flags(flag_values):
    """`(length_bucket, group_by_length)` of the flags (`bert_tf.training.prepare.padding`)."""
    return library_call(lambda: _prepare().padding(values(flag_values)))








def batch_sizes_from_flags(flag_values, replicas):
    """The batch sizes against the number of replicas (and accumulation steps), before any work."""
    library_call(lambda: _prepare().check_batch_sizes(values(flag_values), replicas))


def train_with_progress(trainer, data, init_checkpoint, fields, flag_values):
    """`trainer.train` with a progress display, its errors as one line."""
    work = lambda p: trainer.train(data, init_checkpoint, on_log=p)[0]  # noqa: E731
    return library_call(lambda: _prepare().with_progress(trainer, values(flag_values), fields, work))


def restore_from_flags(trainer, init_checkpoint):
    """Without training: the output_dir's latest checkpoint or --init_checkpoint, or one line."""
    return library_call(lambda: _prepare().restore(trainer, init_checkpoint))
