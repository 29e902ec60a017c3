"""Reading the text files fine-tuning data comes in: TSV tables and plain lines, as UTF-8, local
or remote (gs://..., through TensorFlow's gfile, as the original).

TSV files are read as the original reads them (tab-separated, no quote character: a `"` is a
plain character) but as UTF-8, with csv's field size limit raised to 2**31 - 1 characters for the
read (its default, 128 KiB, rejects a long document with "field larger than field limit"); a bad
file is an error naming the file and its 1-based line.
"""

import contextlib
import csv
import io
import os

from bert_tf.errors import shown

# Large enough for any document, small enough for a C long on every platform (sys.maxsize is not).
CSV_FIELD_SIZE_LIMIT = 2**31 - 1


def format_names(names, limit=20):
    """Formats a label list for a message, shortened when long (a multi-label task may have hundreds).

    Args:
        names: The names (a sequence).
        limit: The most names shown.

    Returns:
        The first `limit` names' reprs joined by ", ", followed by `, ... (N in all)` when there
        are more.
    """
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _is_remote(path):
    return "://" in os.fspath(path)  # gs://...: read through TensorFlow's gfile, as the original


def file_exists(path):
    """Whether a data file exists, local or remote.

    Args:
        path: A local path, or a remote one (gs://...), checked through TensorFlow's gfile.

    Returns:
        For a local path, whether it is a file; for a remote one, whether it exists.
    """
    if _is_remote(path):
        import tensorflow as tf  # only for remote paths: the rest of this module is TF-free

        return tf.io.gfile.exists(path)
    return os.path.isfile(path)


def split_file(data_dir, split, file_name):
    """Finds a split's file in a data folder.

    Args:
        data_dir: The data folder (local or remote).
        split: The split's name, e.g. "dev" (for the message).
        file_name: The file's name in `data_dir`.

    Returns:
        The file's path, `os.path.join(data_dir, file_name)`.

    Raises:
        FileNotFoundError: The file does not exist; the message says which split and file are
            missing (`no dev file 'valid.txt' in data_dir=DIR (PATH does not exist)`).
    """
    path = os.path.join(data_dir, file_name)
    if not file_exists(path):
        raise FileNotFoundError(f"no {split} file {file_name!r} in {shown.data_dir}={data_dir} ({path} does not exist)")
    return path


def _read_bytes(path):
    if _is_remote(path):
        import tensorflow as tf

        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def _open_text(path):
    # utf-8-sig: a byte-order mark (some Windows editors write one) must not become part of a cell;
    # newline="": csv handles \r\n itself.
    if _is_remote(path):
        return io.TextIOWrapper(io.BytesIO(_read_bytes(path)), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _bad_utf8(path, error):
    """The ValueError for a file that is not UTF-8, naming the line of its first bad byte."""
    data = _read_bytes(path)
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return ValueError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at byte {column} of the "
            "line); save the file as UTF-8"
        )
    return ValueError(f"{path}: not valid UTF-8 ({error})")


@contextlib.contextmanager
def _field_size_limit(limit):
    previous = csv.field_size_limit()
    csv.field_size_limit(max(previous, limit))
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def tsv_rows(path, quotechar=None):
    """Reads every row of a TSV file, blank rows included.

    Args:
        path: The file (local or remote), UTF-8 (a byte-order mark is skipped).
        quotechar: csv's quote character; None: none, as the original (a `"` is a plain
            character).

    Returns:
        A list of `(line, cells)`: the row's 1-based line number and its list of strings (`[]`
        for a blank row).

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: The file is not UTF-8 (naming the line of the first bad byte) or csv cannot
            read a row (naming the file and line).
    """
    if not file_exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    rows = []
    with _field_size_limit(CSV_FIELD_SIZE_LIMIT), _open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quotechar=quotechar)
        try:
            for row in reader:
                rows.append((reader.line_num, row))
        except UnicodeDecodeError as e:
            raise _bad_utf8(path, e) from e
        except csv.Error as e:  # e.g. a field over the limit, NUL bytes
            raise ValueError(f"{path}:{reader.line_num}: {e}") from e
    return rows


def read_table(path, columns_read=0):
    """Reads the non-blank rows of a TSV file, checking that all are as wide as the first.

    Args:
        path: The file (local or remote), UTF-8.
        columns_read: How many columns the reader needs (1 + the largest index it reads).

    Returns:
        A list of `(line, cells)`: each non-blank row's 1-based line number and its list of
        strings.

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: The file is empty, is not UTF-8, or has a first row narrower than
            `columns_read` or a row whose width differs from the first row's; the message names
            the file and line.
    """
    table = [(line, row) for line, row in tsv_rows(path) if row]
    if not table:
        raise ValueError(f"{path}: no examples (the file is empty)")
    first_line, first = table[0]
    if len(first) < columns_read:
        raise ValueError(
            f"{path}:{first_line}: {len(first)} tab-separated columns, but the task reads "
            f"{columns_read} (its highest column index is {columns_read - 1})"
        )
    for line, row in table:
        if len(row) != len(first):
            raise ValueError(
                f"{path}:{line}: {len(row)} tab-separated columns, expected {len(first)} as on "
                f"line {first_line} (a tab inside a text, or a missing cell?)"
            )
    return table


def read_text_lines(path):
    """Reads every line of a UTF-8 text file.

    Args:
        path: The file (local or remote); a byte-order mark is skipped.

    Returns:
        A list of `(line number, text)`: the 1-based line number and the line without its end
        (trailing "\r" and "\n" removed).

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: The file is not UTF-8 (naming the line of the first bad byte).
    """
    if not file_exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with _open_text(path) as f:
        try:
            return [(n, line.rstrip("\r\n")) for n, line in enumerate(f, 1)]
        except UnicodeDecodeError as e:
            raise _bad_utf8(path, e) from e
