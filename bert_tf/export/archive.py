"""Writing a SavedModel directory so that no reader ever sees a partial export.

The model is saved into a temporary sibling directory (`.NAME.<host>-<pid>.XXXX.tmp`, beside the
target, so the final rename stays on one file system) and renamed onto the target when complete.
An existing target is replaced only when asked, by two renames (the old export moves aside, the
new one in), then the old one is deleted: a reader sees the old export or the new one, never a
mix. An export killed midway leaves its temporary directory; the next export to the same target
removes it (its process is gone), as `bert_tf.io_utils.staging_folder` does for every folder.

The export carries the files a reader needs to see what it holds (`vocab.txt`,
`bert_config.json`, the fine-tuning task record) as SavedModel assets: they land in the
export's `assets/` folder, and the loaded object names them (`obj.vocab_file.asset_path`). Their
sources are staged inside the temporary directory too (removed before the rename), so that a
killed export leaves nothing anywhere but that directory, which the next export removes.
"""

import json
import os
import shutil

import tensorflow as tf

from bert_tf.io_utils import check_beside_writable, staging_folder, swap_in_folder


def is_export(directory):
    """Whether `directory` holds a SavedModel (what `overwrite` may replace)."""
    return any(os.path.isfile(os.path.join(directory, name)) for name in ("saved_model.pb", "saved_model.pbtxt"))


def check_export_dir(export_dir, overwrite=False, inputs=()):
    """Fails before any work when `export_dir` cannot be written.

    An empty folder is replaced as a new one would be made. A directory that holds something
    other than an earlier export (a training run's checkpoints and results, say) is refused even
    with `overwrite`: replacing it would delete them.

    Args:
        export_dir: The directory the export is to be written to.
        overwrite: Whether an earlier export there may be replaced.
        inputs: Paths the export reads (the checkpoint, run folder, vocab or config); None or ""
            entries are skipped.

    Raises:
        FileExistsError: `export_dir` is a file; or it is or holds one of `inputs`; or it holds
            something other than an earlier export; or it holds an export and `overwrite` is
            False.
        ValueError: The folder that holds `export_dir` cannot take the staged export (naming the
            flag, `export_dir`).
    """
    if os.path.isfile(export_dir):
        raise FileExistsError(f"export directory {export_dir!r} is a file")
    check_beside_writable(export_dir, "export_dir")  # where the export is staged
    target = os.path.realpath(export_dir) + os.sep
    for path in inputs:
        if path and (os.path.realpath(path) + os.sep).startswith(target):
            raise FileExistsError(
                f"export directory {export_dir!r} holds {path!r}, which this export reads: replacing the "
                "directory would delete it (export to another directory)"
            )
    held = sorted(os.listdir(export_dir)) if os.path.isdir(export_dir) else []
    if held and not is_export(export_dir):
        shown = ", ".join(held[:4]) + ", ..." * (len(held) > 4)
        raise FileExistsError(
            f"export directory {export_dir!r} holds {shown}, not an earlier export (no saved_model.pb): --overwrite "
            "replaces only an export; export to another directory"
        )
    if held and not overwrite:  # an empty folder (made for it) holds nothing to lose
        raise FileExistsError(f"export directory {export_dir!r} already exists (overwrite it with --overwrite)")


class ExportWriter:
    """Stages one export, written whole or not at all: a context manager.

    `asset_*` make the asset objects to attach to the root, `save` writes the SavedModel into the
    temporary directory; leaving the `with` block without an error moves it onto `export_dir`,
    with one removes it. Leaving it without an error but without a `save` is a RuntimeError, and
    an `export_dir` that appeared meanwhile (without `overwrite`) a FileExistsError.

    Args:
        export_dir: The directory the export is written to (`check_export_dir` runs at once).
        overwrite: Whether an earlier export there may be replaced.

    Raises:
        FileExistsError: As `check_export_dir`.
        ValueError: As `check_export_dir`.
    """

    ASSET_SOURCES = ".asset_sources"  # in the staging folder: save copies from it into assets/

    def __init__(self, export_dir, overwrite=False):
        check_export_dir(export_dir, overwrite)
        self.export_dir = os.path.abspath(export_dir)
        self.overwrite = overwrite
        self._staging = None
        self._scratch = None

    def __enter__(self):
        self._staging = staging_folder(self.export_dir)
        self._scratch = os.path.join(self._staging, self.ASSET_SOURCES)
        os.mkdir(self._scratch)
        return self

    def asset_copy(self, path, name):
        """Makes an asset holding a copy of the file at `path`, named `name` in the export.

        Args:
            path: The file to copy (copied at once, into the staging folder).
            name: Its file name in the export's `assets/` folder.

        Returns:
            The `tf.saved_model.Asset`, to attach to the root object.
        """
        target = os.path.join(self._scratch, name)
        shutil.copyfile(path, target)
        return tf.saved_model.Asset(target)

    def asset_json(self, value, name):
        """Makes an asset holding `value` as JSON, named `name` in the export.

        Args:
            value: A dict, written with its keys sorted and an indent of 2.
            name: Its file name in the export's `assets/` folder.

        Returns:
            The `tf.saved_model.Asset`, to attach to the root object.
        """
        target = os.path.join(self._scratch, name)
        with open(target, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2, sort_keys=True)
            f.write("\n")
        return tf.saved_model.Asset(target)

    def save(self, root, signatures):
        """Writes `root` as a SavedModel into the staging folder.

        Args:
            root: The root object (a `tf.train.Checkpoint` or other trackable).
            signatures: Signature name -> a tf.function with an input_signature, traced by the save
                itself (tracing it before would trace it twice).
        """
        tf.saved_model.save(root, self._staging, signatures=signatures)

    def __exit__(self, error_type, error, traceback):
        try:
            if error_type is None:
                self._commit()
        finally:
            shutil.rmtree(self._staging, ignore_errors=True)  # gone after a commit

    def _commit(self):
        if not os.path.exists(os.path.join(self._staging, "saved_model.pb")):
            raise RuntimeError("the export was not saved: ExportWriter.save was not called")
        shutil.rmtree(self._scratch)  # the export holds its own copies, in assets/
        try:
            swap_in_folder(self._staging, self.export_dir, replace=self.overwrite)
        except FileExistsError:  # appeared while exporting
            raise FileExistsError(
                f"export directory {self.export_dir!r} already exists (overwrite it with --overwrite)"
            ) from None
