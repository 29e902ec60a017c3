import errno
import os
import shutil
import zipfile

import pytest

from bert_tf import io_utils
from tests.helpers import dead_owner_tag


def test_atomic_write_removes_its_temporary_on_failure_and_a_dead_runs_on_the_next_write(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(OSError, match="No space"):
        with io_utils.atomic_write(str(target)) as f:
            f.write("partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # a full disk mid-write
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]

    # A writer killed mid-write leaves its dot-named temporary: the next write of the file
    # removes it; a live writer's (this process's) and other files' are left alone.
    dead = tmp_path / f".out.txt.{dead_owner_tag()}.abc123xy.tmp"
    live = tmp_path / f".out.txt.{io_utils.owner_tag()}.zz99zz99.tmp"
    other = tmp_path / f".other.txt.{dead_owner_tag()}.abc123xy.tmp"
    for path in (dead, live, other):
        path.write_text("x")
    with io_utils.atomic_write(str(target)) as f:
        f.write("new")
    assert target.read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == sorted(["out.txt", live.name, other.name])


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path):
    """An output given as a link to another disk (`out -> /big/disk/out`): the folder or file
    is written where the link points, the link stays, and nothing is left beside either."""
    disk, work = tmp_path / "disk", tmp_path / "work"
    disk.mkdir()
    work.mkdir()

    def write_folder(link, content, replace=True):
        staging = io_utils.staging_folder(str(link))
        (tmp_path / "staged").write_text(staging)
        try:
            with open(os.path.join(staging, "file"), "w") as f:
                f.write(content)
            io_utils.swap_in_folder(staging, str(link), replace=replace)
        finally:  # as the writers do: a staging folder that was not swapped in goes
            shutil.rmtree(staging, ignore_errors=True)

    (disk / "export").mkdir()
    (disk / "export" / "file").write_text("old")
    (work / "export").symlink_to(disk / "export")
    write_folder(work / "export", "new")  # replacing an existing folder through its link
    assert os.path.dirname((tmp_path / "staged").read_text()) == str(disk)  # staged on the link's disk
    assert os.readlink(work / "export") == str(disk / "export")
    assert (disk / "export" / "file").read_text() == "new"
    assert os.listdir(disk) == ["export"] and os.listdir(work) == ["export"]

    (disk / "empty").mkdir()
    (work / "empty").symlink_to(disk / "empty")
    write_folder(work / "empty", "first", replace=False)  # an empty folder, not replaced: written into
    (work / "missing").symlink_to(disk / "missing")
    write_folder(work / "missing", "first", replace=False)  # a link to a folder still to be made
    for name in ("empty", "missing"):
        assert os.path.islink(work / name) and (disk / name / "file").read_text() == "first"
    with pytest.raises(FileExistsError, match="empty.*already exists"):
        write_folder(work / "empty", "second", replace=False)
    assert (disk / "empty" / "file").read_text() == "first"
    assert sorted(os.listdir(disk)) == ["empty", "export", "missing"]

    (disk / "results.txt").write_text("old")
    (work / "results.txt").symlink_to(disk / "results.txt")
    with io_utils.atomic_write(str(work / "results.txt")) as f:
        f.write("new")
    assert os.path.islink(work / "results.txt") and (disk / "results.txt").read_text() == "new"
    assert sorted(os.listdir(disk)) == ["empty", "export", "missing", "results.txt"]


def test_owner_is_gone():
    assert not io_utils.owner_is_gone(io_utils.owner_tag())
    assert io_utils.owner_is_gone(dead_owner_tag())
    assert not io_utils.owner_is_gone("0123abcd-1")  # another host's process: assumed alive


def test_output_path_checks_name_the_flag_and_the_reason(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    io_utils.check_output_file(tmp_path / "new" / "deeper" / "out.txt")  # folders to be made
    io_utils.check_output_dir(tmp_path / "new" / "run")
    io_utils.check_output_dir(tmp_path / "folder")
    io_utils.check_output_file("gs://bucket/out.txt")  # remote: left to the writer
    cases = [
        (io_utils.check_output_file, tmp_path / "folder", "output_file", r"--output_file=.*folder is a directory"),
        (
            io_utils.check_output_file,
            tmp_path / "file" / "x.txt",
            "output_file",
            r"x.txt is under .*file, which is a file",
        ),
        (io_utils.check_output_dir, tmp_path / "file", "output_dir", r"--output_dir=.*file is a file, not a folder"),
        (io_utils.check_output_dir, tmp_path / "file" / "run", "output_dir", r"run is under .*file, which is a file"),
        (io_utils.check_output_dir, "/proc/bert_tf_run", "output_dir", r"cannot write in /proc"),
        (io_utils.check_output_dir, tmp_path / "dangling", "output_dir",
         rf"^--output_dir=.*dangling is a symbolic link to {tmp_path}/gone, which does not exist: make that folder "
         "first, or name another$"),
    ]
    (tmp_path / "linked").symlink_to(tmp_path / "folder")
    io_utils.check_output_dir(tmp_path / "linked")  # a link to a folder: that folder
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    for check, path, flag, message in cases:
        with pytest.raises(ValueError, match=message):
            check(path, flag)
    assert sorted(os.listdir(tmp_path)) == ["dangling", "file", "folder", "linked"]  # nothing was created


def test_distinct_outputs(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("x")
    os.link(corpus, tmp_path / "same.txt")
    io_utils.check_distinct_outputs([str(tmp_path / "a"), str(tmp_path / "b")], [("input_file", str(corpus))])
    with pytest.raises(ValueError, match="names the same file twice"):
        io_utils.check_distinct_outputs([str(tmp_path / "a"), str(tmp_path / "x" / ".." / "a")])
    with pytest.raises(ValueError, match=r"--output_file=.*same.txt is the input file --input_file=.*corpus.txt"):
        io_utils.check_distinct_outputs([str(tmp_path / "same.txt")], [("input_file", str(corpus))])


def test_keras_file_check(tmp_path):
    fake = tmp_path / "model.keras"
    fake.write_text("not a zip")
    with pytest.raises(ValueError, match="is not a Keras model file"):
        io_utils.check_keras_file(str(fake), "init_checkpoint")
    (tmp_path / "dir.keras").mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        io_utils.check_keras_file(str(tmp_path / "dir.keras"), "init_checkpoint")
    with zipfile.ZipFile(tmp_path / "real.keras", "w") as z:
        z.writestr("config.json", "{}")
    io_utils.check_keras_file(str(tmp_path / "real.keras"), "init_checkpoint")
    io_utils.check_keras_file(str(tmp_path / "missing.keras"), "init_checkpoint")  # the loader says "not found"
    io_utils.check_keras_file(str(tmp_path / "bert_model.ckpt"), "init_checkpoint")  # not a .keras name


def test_expand_patterns_refuses_a_directory(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "sub").mkdir()
    assert io_utils.expand_patterns(str(tmp_path / "a.txt")) == [str(tmp_path / "a.txt")]
    with pytest.raises(ValueError, match=r"--input_file: .*sub is a directory, not a file"):
        io_utils.expand_patterns(str(tmp_path / "*"))


def test_error_line_and_disk_full():
    import tensorflow as tf

    from bert_tf.io_utils import error_line, is_disk_full

    full = OSError(errno.ENOSPC, "No space left on device", "/out/x.tfrecord")
    assert error_line(full) == "/out/x.tfrecord: No space left on device" and is_disk_full(full)
    # TensorFlow's message: the last line, without the graph node and the op suffix.
    tf_error = tf.errors.ResourceExhaustedError(
        None, None, "{{function_node __wrapped__WriteFile}} /out/x: No space left on device [Op:WriteFile] name: "
    )
    assert error_line(tf_error) == "/out/x: No space left on device" and is_disk_full(tf_error)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied", "/out"))
