"""The work folder of a create_pretraining_data run, beside its first output file (beside the file
it points to when it is a symbolic link: on the disk the user chose): named after
a fingerprint of the job (inputs, vocab, settings, outputs), so that a run started again with
the same command finds the shards an interrupted run finished (one part file per output and a
marker each) and resumes; a run removes the folders that stopped runs with other settings left
for the same output. Once every shard is done, each output is assembled from its parts.
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil

import tensorflow as tf

from bert_tf.data import tfrecords
from bert_tf.io_utils import atomic_write, link_target, owner_is_gone, owner_tag


def remove(paths):
    for path in paths:
        with contextlib.suppress(OSError):
            os.remove(path)


def part_path(workdir, shard_index, output_index):
    return os.path.join(workdir, f"part-{shard_index:06d}-{output_index:04d}.tfrecord")


def marker_path(workdir, shard_index):
    return os.path.join(workdir, f"shard-{shard_index:06d}.done.json")


def fingerprint(config, files, output_files, shard_bytes):
    """Identifies the work so that a resumed run only reuses parts made for the same job."""
    state = {
        "plan": 2,  # shards capped at 2 * shard_bytes
        "config": dataclasses.asdict(config),
        "inputs": [(p, tf.io.gfile.stat(p).length, tf.io.gfile.stat(p).mtime_nsec) for p in files],
        "vocab": (os.path.getsize(config.vocab_file), os.stat(config.vocab_file).st_mtime_ns),
        "outputs": list(output_files),
        "shard_bytes": shard_bytes,
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:16]


def work_dir(config, files, output_files, shard_bytes):
    first = link_target(os.path.abspath(output_files[0]))
    tag = fingerprint(config, files, output_files, shard_bytes)
    return os.path.join(os.path.dirname(first), f".{os.path.basename(first)}.work-{tag}")


def temporary_path(output_file):
    """Where `assemble` writes `output_file` until every output is complete: beside the file it
    names, or beside the file it points to when it is a symbolic link (the link stays a link, and
    the rename onto the link's target is on one file system)."""
    target = link_target(os.path.abspath(output_file))
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.tmp")


def assemble(parts, output_file):
    """Interleaves the parts record by record into a temporary beside `output_file`; returns
    its path (renamed onto `output_file` once every output is complete)."""
    temporary = temporary_path(output_file)
    os.makedirs(os.path.dirname(temporary), exist_ok=True)
    remove([temporary])  # a killed run's, or a hard link to a part of another run
    try:
        if len(parts) == 1:  # a hard link: no copy, and the part stays whole if we are stopped now
            try:
                os.link(parts[0], temporary)
            except OSError:
                shutil.copyfile(parts[0], temporary)
        else:
            # At most 16 parts open, read 1 MB at a time: memory stays flat however many shards there are.
            tfrecords.interleave_files(parts, temporary, cycle_length=16)
    except BaseException:  # e.g. a full disk: no partial file is left behind
        remove([temporary])
        raise
    return temporary


_OWNER_FILE = "owner"


def claim(workdir):
    """Creates or reuses (resumes) `workdir`, after removing the work folders that runs with the
    same first output file but other inputs or settings left when they were stopped: they could
    never be resumed. A folder whose run is still alive on this host is left alone. Returns the
    topmost folder above `workdir` that this made (None when its parent existed): `release`
    removes it again when the run writes nothing."""
    parent, name = os.path.split(workdir)
    prefix = name[: name.rindex(".work-") + len(".work-")]
    made, existing = None, parent
    while not os.path.lexists(existing):
        made, existing = existing, os.path.dirname(existing)
    os.makedirs(parent, exist_ok=True)
    for other in os.listdir(parent):
        path = os.path.join(parent, other)
        if other == name or not other.startswith(prefix) or not os.path.isdir(path):
            continue
        try:
            with open(os.path.join(path, _OWNER_FILE), encoding="utf-8") as f:
                owner = f.read().strip()
        except OSError:
            owner = ""
        if not owner or owner_is_gone(owner):
            shutil.rmtree(path, ignore_errors=True)
    os.makedirs(workdir, exist_ok=True)
    with atomic_write(os.path.join(workdir, _OWNER_FILE)) as f:
        f.write(owner_tag())
    return made


def release(workdir, made=None):
    """Removes `workdir` and, up to `made` (what `claim` returned), the folders above it that
    `claim` made and that are empty now: a run that writes no output leaves nothing behind."""
    shutil.rmtree(workdir, ignore_errors=True)
    if made is None:
        return
    folder = os.path.dirname(workdir)
    while True:
        try:
            os.rmdir(folder)  # only an empty folder: one something else wrote into meanwhile stays
        except OSError:
            return
        if folder == made:
            return
        folder = os.path.dirname(folder)
