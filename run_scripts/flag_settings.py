"""The one error line every script prints: the library's `bert_tf.errors.SettingError` (or, for
a model whose outputs turned NaN or Inf, its FloatingPointError) becomes `script: error: message`
and exit code 1 (`at_the_edge`, `fail`); and flag values as the library reads settings
(`values`), for the padding rule's tests and any script of yours that keeps absl flags."""

import os
import sys
import types

from bert_tf.errors import SettingError, named


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
    the settings `flag_names` are written as flags (`bert_tf.errors.shown`). A SettingError's message is the
    line."""
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
















def padding_from_flags(flag_values):
    """`(length_bucket, group_by_length)` of the flags (`bert_tf.training.prepare.padding`)."""
    return library_call(lambda: _prepare().padding(values(flag_values)))
