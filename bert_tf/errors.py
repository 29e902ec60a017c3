"""The one error type of a bad setting.

Every check of a setting that the library makes before it does any work (a value out of range, a
file that is not there, two settings that contradict each other, a run folder that holds another
run) raises `SettingError`. It carries the setting's name and the message the user reads. A script
prints the message as its one error line; a Python caller gets the exception and reads `setting`.
"""

import contextlib
import re

__all__ = ["SettingError", "as_flags", "named", "reported"]


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
    """A library message with settings written as the script's flags.

    Args:
        message: The message.
        names: The settings' names: `output_dir=X` and a bare `output_dir` become
            `--output_dir=X` and `--output_dir` (not inside a path or a word).

    Returns:
        The message as a script prints it.
    """
    pattern = r"(?<![\w\-/.])(" + "|".join(map(re.escape, names)) + r")(?=[=\s:,;)]|$)"
    return re.sub(pattern, r"--\1", message)


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
    """Within it, a library error (ValueError, FileNotFoundError, FloatingPointError) is raised
    again as a SettingError: `prefix` before its message (the setting or file it is about, when
    the message does not say; not for a FloatingPointError, which is about the model's figures),
    the settings `flag_names` written as flags (`as_flags`). A SettingError passes as it is.

    Args:
        prefix: Put before the message.
        flag_names: Settings the message names bare, written as flags.
        setting: The setting the error is about (default: the one of `flag_names` its message
            starts with; with the prefix "--", the name its message starts with as `name=` or
            `name:`; else None).

    Raises:
        SettingError: For an error of the kinds above.
    """
    try:
        yield
    except SettingError:
        raise
    except FloatingPointError as e:  # the model's figures, not a file or setting: no prefix
        raise SettingError(str(e)) from e
    except (ValueError, FileNotFoundError) as e:
        message = f"{prefix}{e}"
        if setting is None and prefix == "--":  # the message starts with its setting: `name=value`, `name: ...`
            setting = _leading(str(e), [re.match(r"\w*", str(e)).group()], ending="=:")
        raise SettingError(as_flags(message, flag_names) if flag_names else message,
                           setting or _leading(str(e), flag_names)) from None


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
