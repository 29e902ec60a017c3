"""File helpers shared by the library: atomic writes, so no reader ever sees a partial file."""

import contextlib
import os
import tempfile


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """Opens a temporary file beside `path`; renames it onto `path` only if the block succeeds.

    If the block raises (or the process dies), `path` is untouched and the temporary file is
    removed (or left under a dot-name that never looks like the finished file).
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": encoding})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def expand_patterns(spec, flag="input_file"):
    """Comma-separated files/glob patterns -> file list (each pattern sorted, in the given order).

    A pattern that matches nothing is an error naming it (the original silently skipped it).
    Globs go through tf.io.gfile, so gs:// patterns work as in the original.
    """
    import tensorflow as tf  # only here: the rest of this module is TensorFlow-free

    files = []
    for pattern in filter(None, (p.strip() for p in spec.split(","))):
        matched = tf.io.gfile.glob(pattern)
        if not matched:
            raise FileNotFoundError(f"--{flag} pattern {pattern!r} matches no file")
        files.extend(sorted(matched))
    if not files:
        raise FileNotFoundError(f"--{flag}={spec!r} names no file")
    return files
