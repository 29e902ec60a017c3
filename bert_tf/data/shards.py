"""Cutting a corpus into shards that end at document boundaries, and reading them back.

A document is a run of non-blank lines; a line is blank when it is empty after decoding and
str.strip(), as the original reader decides. Shards never split a document.
"""

import codecs
import dataclasses
import threading

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int
    path: str
    start: int  # byte offsets; [start, end) holds whole documents
    end: int


def _is_blank(raw_line):
    return not raw_line.decode("utf-8", "replace").strip()


def plan_shards(files, shard_bytes):
    """Cuts each file into shards of about `shard_bytes`, each ending after a blank line."""
    shards = []
    for path in files:
        size = tf.io.gfile.stat(path).length
        start = 0
        with tf.io.gfile.GFile(path, "rb") as f:
            while start < size:
                end = size
                if start + shard_bytes < size:
                    f.seek(start + shard_bytes)
                    f.readline()  # finish the line the cut fell into
                    while True:
                        line = f.readline()
                        if not line:
                            break
                        if _is_blank(line):
                            end = f.tell()
                            break
                shards.append(Shard(len(shards), path, start, end))
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
    return lines, _invalid.bytes
