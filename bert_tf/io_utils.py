"""File helpers shared by the library: atomic writes (no reader ever sees a partial file, and no
temporary file outlives the run that made it for long), and the checks scripts make on their
input and output paths before any work."""

import contextlib
import errno
import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
import zipfile


def umask():
    """The process's umask (read without changing it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _host_hash():
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def owner_tag(pid=None):
    """`<host hash>-<pid>` (this process's pid unless `pid` is given): names temporary files and
    folders after the process that writes them, so that a later run can tell a dead run's
    leftovers from a live writer's."""
    return f"{_host_hash()}-{os.getpid() if pid is None else pid}"


def owner_is_gone(tag):
    """Whether the process that `owner_tag()` named is no longer running. Only a process of
    this host can be checked; one of another host (a shared folder) counts as alive."""
    host, _, pid = tag.rpartition("-")
    if host != _host_hash() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # e.g. another user's process: alive
        return False
    return False


def _dead_writers_temporaries(directory, base, suffixes):
    """The names in `directory` of the temporaries named for `base` as this module names them
    (`.{base}.{owner_tag()}.XXXX.{suffix}`, a suffix of `suffixes`) whose writer has died."""
    prefix = f".{base}."
    pattern = re.compile(re.escape(prefix) + r"([0-9a-f]{8}-\d+)\.[A-Za-z0-9_]+\.(?:" + "|".join(suffixes) + ")")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [name for name in names
            if name.startswith(prefix) and (match := pattern.fullmatch(name)) and owner_is_gone(match.group(1))]


def remove_stale_temporaries(directory, base):
    """Removes the temporaries left for `base` in `directory` (named `.{base}.{owner_tag()}.*.tmp`,
    as `atomic_write` names them) when their writer died (killed mid-write): the next write of
    the same file cleans up after it."""
    for name in _dead_writers_temporaries(directory, base, ("tmp",)):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(directory, name))


def _link_target(path):
    """The file or folder that writing `path` writes: `path`, or where it points when it (or a
    folder above it) is a symbolic link. The link stays a link: `out -> /big/disk/out` keeps
    pointing at what was written, on the disk the user chose, instead of being replaced."""
    return os.path.realpath(path)


def link_target(path):
    """The file that writing `path` writes (`_link_target`): for a writer that builds its file
    under a temporary name of its own and renames it into place, as `atomic_write` does. The
    temporary goes beside what this returns (the same file system), and the rename onto it."""
    return _link_target(path)


def staging_folder(folder):
    """A new empty folder beside `folder` to build it in (`.{base}.{owner_tag()}.XXXX.tmp`: on the
    same file system, so `swap_in_folder` is a rename), after removing the temporaries of earlier
    writers of `folder` that died (killed mid-write: their `.tmp` and `.old` folders). A writer
    killed between `swap_in_folder`'s two renames left `folder` missing and its only copy in its
    `.old` folder: that copy is moved back first. A symbolic link is followed (`_link_target`)."""
    folder = _link_target(folder)
    parent, base = os.path.split(folder)
    os.makedirs(parent, exist_ok=True)
    stale = _dead_writers_temporaries(parent, base, ("tmp", "old"))
    for name in sorted(stale, key=lambda name: not name.endswith(".old")):  # .old first
        path = os.path.join(parent, name)
        if name.endswith(".old") and not os.path.exists(folder) and os.path.isdir(os.path.join(path, base)):
            with contextlib.suppress(OSError):
                os.rename(os.path.join(path, base), folder)
        shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f".{base}.{owner_tag()}.", suffix=".tmp", dir=parent)


def swap_in_folder(staging, folder, replace=True):
    """Renames the finished `staging` folder onto `folder`, with the user's umask, or with the
    permissions and group of the `folder` it replaces (a shell inside that one is left in the
    deleted folder: it sees the new one after a `cd`). An existing `folder` is replaced (with
    `replace`) by two renames (it moves aside, the new one in), then deleted: a reader sees the
    old folder or the new one, never a mix. Without `replace`, a `folder` that exists and holds
    anything is a FileExistsError and is left as it is; an empty one is replaced. A symbolic link
    is followed (`_link_target`), as `staging_folder` follows it."""
    target = _link_target(folder)
    if os.path.isdir(target):  # the folder it replaces keeps its settings: permissions, setgid, group
        held = os.stat(target)
        with contextlib.suppress(OSError):
            os.chown(staging, -1, held.st_gid)  # first: a change of group clears setgid
        os.chmod(staging, stat.S_IMODE(held.st_mode))
    else:
        os.chmod(staging, 0o777 & ~umask())  # mkdtemp makes 0700 folders
    if not replace:
        try:
            os.rename(staging, target)  # refuses a folder that holds anything (a file too)
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                raise
            raise FileExistsError(f"{folder!r} already exists") from None
        return
    if not os.path.exists(target):
        os.rename(staging, target)
        return
    parent, base = os.path.split(target)
    old = tempfile.mkdtemp(prefix=f".{base}.{owner_tag()}.", suffix=".old", dir=parent)
    os.rename(target, os.path.join(old, base))
    os.rename(staging, target)
    with contextlib.suppress(OSError):
        shutil.rmtree(old)


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8", remove_stale=True):
    """Opens a temporary file beside `path`; renames it onto `path` only if the block succeeds.

    If the block raises (a full disk included), `path` is untouched and the temporary file is
    removed; if the process dies, the dot-named temporary (which never looks like the finished
    file) is removed by the next write of `path` (unless `remove_stale=False`: for the many small
    files of a folder that is removed whole, where listing it for every write would cost). A
    symbolic link is written through, as the shell's `>` writes: the file it points to is replaced
    and the link stays.
    """
    path = _link_target(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    base = os.path.basename(path)
    if remove_stale:
        remove_stale_temporaries(directory, base)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{owner_tag()}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": encoding})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600 files; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def expand_patterns(spec, flag="input_file"):
    """Comma-separated files/glob patterns -> file list (each pattern sorted, in the given order).

    A pattern that matches nothing is an error naming it (the original silently skipped it), and
    so is a local directory among the matches (ValueError). Globs go through tf.io.gfile, so gs://
    patterns work as in the original.
    """
    import tensorflow as tf  # only here: the rest of this module is TensorFlow-free

    files = []
    for pattern in filter(None, (p.strip() for p in spec.split(","))):
        matched = tf.io.gfile.glob(pattern)
        if not matched:
            raise FileNotFoundError(f"--{flag} pattern {pattern!r} matches no file")
        for path in sorted(matched):
            if not _is_remote(path) and os.path.isdir(path):  # (a stat per remote file would be slow)
                raise ValueError(f"--{flag}: {path} is a directory, not a file")
            files.append(path)
    if not files:
        raise FileNotFoundError(f"--{flag}={spec!r} names no file")
    return files


# ---------------------------------------------------------------------------------------------
# Checks of output paths, made before any work so that a bad path never costs a run. Remote
# paths (gs://...) are left to the writer.


def _is_remote(path):
    return "://" in str(path)


def _check_creatable(folder, flag, path):
    """`folder` exists as a writable directory or can be made: its nearest existing ancestor is a
    directory where files can be created."""
    existing = os.path.abspath(folder)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f"--{flag}={path} is under {existing}, which is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        raise ValueError(f"--{flag}={path}: cannot write in {existing} ({e.strerror or e})") from None


def check_beside_writable(path, flag):
    """ValueError naming `flag` unless new entries can be made in the folder that holds `path` (a
    link followed): where a folder written whole is staged, then renamed onto `path`."""
    if not _is_remote(os.fspath(path)):
        _check_creatable(os.path.dirname(_link_target(os.path.abspath(path))), flag, path)


def check_output_file(path, flag="output_file"):
    """ValueError naming `flag` unless `path` can be written as a file: not an existing
    directory, not under a regular file, in a folder that exists or can be made and is writable."""
    path = os.fspath(path)
    if _is_remote(path):
        return
    if os.path.isdir(path):
        raise ValueError(f"--{flag}={path} is a directory; name a file to write")
    _check_creatable(os.path.dirname(os.path.abspath(path)), flag, path)


def check_output_dir(path, flag="output_dir"):
    """ValueError naming `flag` unless `path` is a writable folder or one that can be made."""
    path = os.fspath(path) if path is not None else ""
    if not path.strip():  # "" would be the current folder for some calls and no path for others; " " a folder " "
        raise ValueError(f"--{flag} is empty: name the folder to write in")
    if _is_remote(path):
        return
    if os.path.islink(path) and not os.path.exists(path):
        raise ValueError(f"--{flag}={path} is a symbolic link to {_link_target(path)}, which does not exist: "
                         "make that folder first, or name another")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ValueError(f"--{flag}={path} is a file, not a folder")
    _check_creatable(path, flag, path)


def _identity(path):
    """What makes two paths the same file: (device, inode) when it exists (links included),
    else the resolved absolute path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.realpath(path)


def check_distinct_outputs(outputs, inputs=(), flag="output_file"):
    """ValueError unless the output files are all different and none is an input file (which the
    run would overwrite). `inputs`: (flag, path) pairs, named in the message."""
    seen = {}
    for path in outputs:
        if _is_remote(path):
            continue
        key = _identity(path)
        if key in seen:
            raise ValueError(f"--{flag} names the same file twice: {seen[key]} and {path}")
        seen[key] = path
    for input_flag, path in inputs:
        if not _is_remote(path) and _identity(path) in seen:
            raise ValueError(
                f"--{flag}={seen[_identity(path)]} is the input file --{input_flag}={path}: it would be overwritten"
            )


def check_keras_file(path, flag):
    """ValueError naming `flag` when `path` names a `.keras` file that exists but is not one
    (Keras would call it "not found")."""
    path = os.fspath(path) if path else ""
    if not path.endswith(".keras") or _is_remote(path) or not os.path.lexists(path):
        return
    if os.path.isdir(path):
        raise ValueError(f"--{flag}={path} is a directory, not a .keras file")
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"--{flag}={path} is not a Keras model file (a .keras file is a zip archive that Keras writes)"
        )


def error_line(error):
    """One readable line for an OSError or a TensorFlow error (e.g. a full disk): the file and
    the reason, without TensorFlow's graph-node prefix and op suffix."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    line = lines[-1] if lines else type(error).__name__
    return re.sub(r"\s*\[Op:\w+\].*$", "", re.sub(r"\{\{function_node [^}]*\}\}\s*", "", line)).strip()


_DISK_FULL = ("No space left on device", "File too large", "Disk quota exceeded")


def is_disk_full(error):
    """Whether `error` (an OSError or a TensorFlow error) says a write found no room."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return True
    return any(text in str(error) for text in _DISK_FULL)


def read_json_object(path):
    """The JSON object (a dict) in the file at `path`; a ValueError `cannot read PATH: why` when
    the file cannot be read, is not JSON or holds another JSON value."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {path}: {e}") from None
    if not isinstance(values, dict):
        raise ValueError(f"cannot read {path}: not a JSON object")
    return values
