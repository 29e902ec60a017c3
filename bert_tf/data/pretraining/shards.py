"""Cutting a corpus into shards that end at document boundaries, and reading them back.

A document is a run of non-blank lines; a line is blank when it is empty after decoding and
str.strip(), as the original reader decides. A shard ends at the first blank line after
`shard_bytes`; only a document (or a line) that runs on past twice that is cut, so that no shard
holds more than `2 * shard_bytes` of text whatever the input (one endless line, binary junk): that
bounds the memory a shard takes.
"""

import codecs
import dataclasses
import threading

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int
    path: str
    start: int  # byte offsets; [start, end) holds whole documents, unless `cut` says otherwise
    end: int
    # "" when the shard ends at a document boundary (or the file's end); "document" when a
    # document longer than the cap was cut at a line end; "line" when a line was cut (at a space,
    # else between two UTF-8 characters): its rest starts the next shard as a new document.
    cut: str = ""


def _is_blank(raw_line):
    return not raw_line.decode("utf-8", "replace").strip()


def _shard_end(data, shard_bytes, at_eof):
    """Where a shard ends in `data` (its first `2 * shard_bytes` bytes, or all that is left of
    the file when `at_eof`), as (offset, cut)."""
    # Finish the line the target size falls into, then end after the first blank line.
    position = data.find(b"\n", shard_bytes) + 1
    while position:
        newline = data.find(b"\n", position)
        if newline < 0:
            break
        if _is_blank(data[position : newline + 1]):
            return newline + 1, ""
        position = newline + 1
    if at_eof:
        return len(data), ""
    # None before the cap: end after the last blank line before it (a smaller shard), so that
    # only a document longer than the cap itself is ever cut...
    newline = data.rfind(b"\n")
    while newline >= 0:
        previous = data.rfind(b"\n", 0, newline)
        if _is_blank(data[previous + 1 : newline + 1]):
            return newline + 1, ""
        newline = previous
    # ... at its last line end, or inside its one line: at a space, else before the last
    # character start (never inside a UTF-8 sequence, however the bytes run).
    newline = data.rfind(b"\n")
    if newline >= 0:
        return newline + 1, "document"
    space = max(data.rfind(b" "), data.rfind(b"\t"))
    if space >= 0:
        return space + 1, "line"
    cut = len(data) - 1
    while cut > len(data) - 4 and cut > 1 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return max(cut, 1), "line"


def plan_shards(files, shard_bytes):
    """Cuts each file into shards of about `shard_bytes`, each ending after a blank line (see the
    module docstring for documents longer than `2 * shard_bytes`)."""
    shards = []
    for path in files:
        size = tf.io.gfile.stat(path).length
        start = 0
        with tf.io.gfile.GFile(path, "rb") as f:
            while start < size:
                end, cut = size, ""
                if start + shard_bytes < size:
                    f.seek(start)
                    limit = min(size, start + 2 * shard_bytes)
                    offset, cut = _shard_end(f.read(limit - start), shard_bytes, at_eof=limit == size)
                    end = start + offset
                shards.append(Shard(len(shards), path, start, end, cut))
                start = end
    return shards


_invalid = threading.local()  # bytes replaced by the calling thread's current read_shard_lines


def _count_invalid(error):
    _invalid.bytes += error.end - error.start
    return "\ufffd", error.end


codecs.register_error("bert_tf_count", _count_invalid)


def read_shard_lines(shard):
    """The shard's lines, split on "\\n" as the original's reader, decoded (invalid UTF-8 bytes
    replaced and counted) and stripped. Returns (lines, invalid_byte_count)."""
    with tf.io.gfile.GFile(shard.path, "rb") as f:
        f.seek(shard.start)
        data = f.read(shard.end - shard.start)
    lines, _invalid.bytes = [], 0
    for raw in data.split(b"\n"):
        try:
            lines.append(raw.decode("utf-8").strip())
        except UnicodeDecodeError:
            lines.append(raw.decode("utf-8", "bert_tf_count").strip())
    if data.endswith(b"\n"):
        lines.pop()  # the split's empty tail is not a line
    if shard.cut:
        lines.append("")  # the cut ends a document: the next shard's text is another one
    return lines, _invalid.bytes
