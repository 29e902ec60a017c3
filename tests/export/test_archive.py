"""ExportWriter: a reader sees a whole export or none, never a partial one; an existing export
is replaced only when asked; the directory gets the user's umask; a killed export leaves nothing
but its temporary folder (its assets' sources included), which the next export to the same place
removes."""

import json
import os
import signal
import stat
import subprocess
import sys

import pytest
import tensorflow as tf

from bert_tf.export import ExportWriter, check_export_dir
from bert_tf.io_utils import owner_tag
from tests.helpers import dead_owner_tag

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _root(value):
    root = tf.train.Checkpoint()
    root.v = tf.Variable(value)
    root.f = tf.function(lambda: root.v * 2.0, input_signature=[])
    return root


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_an_export_appears_whole_with_the_users_umask_and_its_assets(tmp_path):
    (tmp_path / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    old = os.umask(0o027)
    try:
        with ExportWriter(str(tmp_path / "model")) as writer:
            assert not (tmp_path / "model").exists()  # staged under a temporary name
            root = _root(1.0)
            root.vocab_file = writer.asset_copy(str(tmp_path / "vocab.txt"), "vocab.txt")
            root.task_file = writer.asset_json({"labels": ["0", "1"]}, "task.json")
            writer.save(root, None)
    finally:
        os.umask(old)
    loaded = tf.saved_model.load(str(tmp_path / "model"))
    assert loaded.f().numpy() == 2.0
    assert (tmp_path / "model").stat().st_mode & 0o777 == 0o750
    assert _leftovers(tmp_path) == []
    # The assets are the export's own copies; their staged sources are not part of it.
    assert sorted(os.listdir(tmp_path / "model" / "assets")) == ["task.json", "vocab.txt"]
    assert loaded.vocab_file.asset_path.numpy().decode() == str(tmp_path / "model" / "assets" / "vocab.txt")
    assert json.loads((tmp_path / "model" / "assets" / "task.json").read_text()) == {"labels": ["0", "1"]}
    assert not (tmp_path / "model" / ExportWriter.ASSET_SOURCES).exists()


def test_an_existing_export_is_kept_unless_overwrite_and_a_failed_one_leaves_nothing(tmp_path):
    target = tmp_path / "model"
    with ExportWriter(str(target)) as writer:
        writer.save(_root(1.0), None)
    with pytest.raises(FileExistsError, match="already exists"):
        check_export_dir(str(target))
    with pytest.raises(FileExistsError, match="already exists"):
        ExportWriter(str(target))
    # A failure while exporting leaves the old export and no temporary folder.
    with pytest.raises(RuntimeError, match="boom"):
        with ExportWriter(str(target), overwrite=True) as writer:
            writer.save(_root(5.0), None)
            raise RuntimeError("boom")
    assert tf.saved_model.load(str(target)).f().numpy() == 2.0
    assert _leftovers(tmp_path) == []
    with ExportWriter(str(target), overwrite=True) as writer:
        writer.save(_root(5.0), None)
    assert tf.saved_model.load(str(target)).f().numpy() == 10.0
    assert _leftovers(tmp_path) == []
    # An empty folder (made for the export, or a link to one on another disk) needs no --overwrite,
    # as convert_checkpoint.py's; the link stays, and the folder's settings (a shared folder's
    # setgid and group permissions) are the new one's.
    (tmp_path / "empty").mkdir()
    os.chmod(tmp_path / "empty", 0o2770)
    (tmp_path / "disk").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "disk")
    for place in (tmp_path / "empty", tmp_path / "linked"):
        with ExportWriter(str(place)) as writer:
            writer.save(_root(3.0), None)
        assert tf.saved_model.load(str(place)).f().numpy() == 6.0
    assert (tmp_path / "linked").is_symlink() and (tmp_path / "disk" / "saved_model.pb").is_file()
    assert stat.S_IMODE(os.stat(tmp_path / "empty").st_mode) == 0o2770
    with ExportWriter(str(tmp_path / "empty"), overwrite=True) as writer:  # and an export replaced
        writer.save(_root(4.0), None)
    assert stat.S_IMODE(os.stat(tmp_path / "empty").st_mode) == 0o2770
    assert _leftovers(tmp_path) == []
    # Under a file: one line naming the flag before any work (the export is staged beside its folder).
    with pytest.raises(ValueError, match=rf"^--export_dir={tmp_path}/file/model is under {tmp_path}/file, which is "
                                         "a file, not a folder$"):
        (tmp_path / "file").write_text("x")
        check_export_dir(str(tmp_path / "file" / "model"))
    (tmp_path / "file").unlink()
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="is a file"):
        check_export_dir(str(tmp_path / "file"), overwrite=True)
    # A folder that holds something else (a run's checkpoints): overwrite would delete it, so it cannot.
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint").write_text("")
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match=r"holds checkpoint, not an earlier export \(no saved_model.pb\): "
                                                  "--overwrite replaces only an export; export to another directory"):
            check_export_dir(str(run), overwrite=overwrite)


def test_an_export_never_replaces_what_it_reads(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    # The run folder itself, a folder above it, and a folder above the vocab: refused even with overwrite.
    for export_dir, held in ((run, run / "ckpt-5"), (tmp_path, run / "ckpt-5"), (run, run / "vocab.txt")):
        with pytest.raises(FileExistsError, match=f"holds '{held}', which this export reads"):
            check_export_dir(str(export_dir), overwrite=True, inputs=(str(held),))
    # A sibling whose name starts the same, or a folder inside the run: allowed.
    check_export_dir(str(tmp_path / "run_export"), overwrite=True, inputs=(str(run / "ckpt-5"),))
    check_export_dir(str(run / "export"), overwrite=True, inputs=(str(run / "ckpt-5"), None))


_KILLED_EXPORT = r"""
import os, signal, sys
import tensorflow as tf
from bert_tf.export import ExportWriter
with ExportWriter(sys.argv[1], overwrite=True) as writer:
    root = tf.train.Checkpoint()
    root.v = tf.Variable(7.0)
    root.config = writer.asset_json({"layers": 2}, "bert_config.json")
    writer.save(root, None)
    os.kill(os.getpid(), signal.SIGKILL)  # killed with the export written but not yet moved in
"""


def test_an_export_killed_midway_leaves_the_old_one_and_the_next_export_removes_its_temporary(tmp_path):
    target = tmp_path / "model"
    with ExportWriter(str(target)) as writer:
        writer.save(_root(1.0), None)
    temp = tmp_path / "tmp"  # the killed process's temporary directory: nothing may be left there
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3", "TMPDIR": str(temp)}
    killed = subprocess.run([sys.executable, "-c", _KILLED_EXPORT, str(target)], env=env, capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert tf.saved_model.load(str(target)).f().numpy() == 2.0  # the old export, whole
    (left,) = _leftovers(tmp_path)  # the killed run's staging folder, named after its process
    assert left.startswith(".model.") and left.endswith(".tmp")
    assert (tmp_path / left / ExportWriter.ASSET_SOURCES / "bert_config.json").is_file()  # in it, not elsewhere
    assert [p.name for p in temp.iterdir() if "export" in p.name or "asset" in p.name] == []
    # Another live process's staging folder is never taken for a dead one's.
    with subprocess.Popen(["sleep", "60"]) as sleeper:
        try:
            live = tmp_path / f".model.{owner_tag(sleeper.pid)}.abcd1234.tmp"
            live.mkdir()
            with ExportWriter(str(target), overwrite=True) as writer:
                writer.save(_root(3.0), None)
        finally:
            sleeper.kill()
    assert tf.saved_model.load(str(target)).f().numpy() == 6.0
    assert _leftovers(tmp_path) == [live.name]


def test_an_export_appearing_meanwhile_is_kept_without_overwrite(tmp_path):
    target = tmp_path / "model"
    with pytest.raises(FileExistsError, match="already exists"):
        with ExportWriter(str(target)) as writer:
            writer.save(_root(1.0), None)
            target.mkdir()  # another export lands first
            (target / "saved_model.pb").write_text("theirs")
    assert (target / "saved_model.pb").read_text() == "theirs"
    assert _leftovers(tmp_path) == []


def test_an_export_killed_between_its_two_renames_is_restored_by_the_next(tmp_path):
    # Killed after moving the old export aside, before moving the new one in: the target is
    # missing and the old export's only copy is in the dead writer's .old folder.
    target = tmp_path / "model"
    with ExportWriter(str(target)) as writer:
        writer.save(_root(1.0), None)
    aside = tmp_path / f".model.{dead_owner_tag()}.zz99zz99.old"
    aside.mkdir()
    target.rename(aside / "model")
    # Without overwrite the restored export stays; with it, it is replaced.
    with pytest.raises(FileExistsError, match="already exists"):
        with ExportWriter(str(target)) as writer:
            writer.save(_root(4.0), None)
    assert tf.saved_model.load(str(target)).f().numpy() == 2.0
    assert _leftovers(tmp_path) == []
    with ExportWriter(str(target), overwrite=True) as writer:
        writer.save(_root(4.0), None)
    assert tf.saved_model.load(str(target)).f().numpy() == 8.0
