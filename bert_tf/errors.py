"""The one error type of a bad setting.

Every check of a setting that the library makes before it does any work (a value out of range, a
file that is not there, two settings that contradict each other, a run folder that holds another
run) raises `SettingError`. It carries the setting's name and the message the user reads. A script
prints the message as its one error line; a Python caller gets the exception and reads `setting`.
"""

import contextlib
import contextvars
import itertools
import re
import warnings

__all__ = ["SettingError", "as_flags", "named", "reported", "shown", "written_as_flags"]


class SettingError(ValueError):
    """A setting that cannot be used, with what was expected.

    It is a ValueError, so code that caught the library's ValueErrors still catches it.

    Args:
        message: What is wrong and what was expected. The scripts print it as it stands, so it
            writes the settings as their flags (`--max_seq_length=5 ...`).
        setting: The name of the setting at fault (a field of the settings class), or None where
            the message is about several or about a file.

    Attributes:
        setting: As given.
        message: As given.
    """

    def __init__(self, message, setting=None):
        super().__init__(message)
        self.message = message
        self.setting = setting


def as_flags(message, names):
    """A finished message with settings written as the script's flags (deprecated).

    Deprecated: a message names its settings with `shown`, which `reported(flag_names=...)`
    writes as flags as the message is built. Nothing in the package calls this; it goes in 0.3.0.

    Args:
        message: The message.
        names: The settings' names: `output_dir=X` and a bare `output_dir` become
            `--output_dir=X` and `--output_dir` (not inside a path or a word).

    Returns:
        The message as a script prints it.
    """
    warnings.warn("bert_tf.errors.as_flags is deprecated (removed in 0.3.0): write a message's settings with "
                  "bert_tf.errors.shown", DeprecationWarning, stacklevel=2)
    pattern = r"(?<![\w\-/.])(" + "|".join(map(re.escape, names)) + r")(?=[=\s:,;)]|$)"
    return re.sub(pattern, r"--\1", message)


# The settings that messages write as flags, within `reported(flag_names=...)` blocks that name them.
_FLAG_NAMES = contextvars.ContextVar("bert_tf_flag_names", default=frozenset())


class _Shown:
    """`shown(name)`, and `shown.name` for a name written in a message."""

    def __call__(self, name):
        """A setting's name as a message writes it.

        Args:
            name: The setting's name (a settings field).

        Returns:
            `--name` within a `reported` block whose caller writes that setting as a flag
            (its `flag_names`), else `name`.
        """
        return f"--{name}" if name in _FLAG_NAMES.get() else name

    def __repr__(self):
        return "shown"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self(name)


# A setting's name in a message: `f"{shown.output_dir}={path} holds ..."` reads "output_dir=..." to a
# Python caller and "--output_dir=..." in a script's error line, the message built once.
shown = _Shown()


@contextlib.contextmanager
def written_as_flags(names=()):
    """Within it, messages name the settings `names` as flags (`shown`), and no other.

    `reported` sets them for its block; work handed on from a block that is not that block's
    own (a search's runs) starts afresh with `written_as_flags()`.

    Args:
        names: The settings written as flags.

    Yields:
        None.
    """
    token = _FLAG_NAMES.set(frozenset(names))
    try:
        yield
    finally:
        _FLAG_NAMES.reset(token)


def _leading(message, names, ending=None):
    """The one of `names` that `message` starts with (`learning_rate=...`, `output_dir holds ...`),
    followed by one of the characters `ending` where given, or None."""
    for name in filter(None, names):
        rest = message[len(name):len(name) + 1] if message.startswith(name) else None
        if rest is not None and (rest in ending if ending else rest == "" or not (rest.isalnum() or rest == "_")):
            return name
    return None


@contextlib.contextmanager
def reported(prefix="", flag_names=(), setting=None):
    """Within it, a library error is raised again as a SettingError naming its setting.

    A ValueError, FileNotFoundError or FloatingPointError raised within becomes a SettingError
    with `prefix` before its message (the setting or file it is about, when the message does not
    say; not for a FloatingPointError, which is about the model's figures). A SettingError passes
    as it is. Messages built within name the settings `flag_names` as flags (`shown`); a block
    nested in this one names its own.

    Args:
        prefix: Put before the message.
        flag_names: Settings that messages built within write as flags (`--name`): the caller
            is a script's, whose user gave them as flags.
        setting: The setting the error is about (default: the one of `flag_names` its message
            starts with; with the prefix "--", the name its message starts with as `name=` or
            `name:`; else None).

    Raises:
        SettingError: For an error of the kinds above.
    """
    # The block's own names only: an error raised within a block nested in it is reported by that
    # one, and passes this one as it is.
    try:
        with written_as_flags(flag_names):
            yield
    except SettingError:
        raise
    except FloatingPointError as e:  # the model's figures, not a file or setting: no prefix
        raise SettingError(str(e)) from e
    except (ValueError, FileNotFoundError) as e:
        message = f"{prefix}{e}"
        if setting is None and prefix == "--":  # the message starts with its setting: `name=value`, `name: ...`
            first = "".join(itertools.takewhile(lambda c: c.isalnum() or c == "_", str(e)))
            setting = _leading(str(e), [first], ending="=:")
        leading = setting or _leading(str(e), flag_names) or _leading(str(e), [f"--{n}" for n in flag_names])
        raise SettingError(message, leading.removeprefix("--") if leading else None) from None


def named(work, prefix="", flag_names=(), setting=None):
    """Runs `work()` within `reported(prefix, flag_names, setting)`: for work that is handed on.

    Args:
        work: A function of no argument.
        prefix: As `reported`'s.
        flag_names: As `reported`'s.
        setting: As `reported`'s.

    Returns:
        What `work()` returns.

    Raises:
        SettingError: As `reported`.
    """
    with reported(prefix, flag_names, setting):
        return work()
