"""Streaming reader of SQuAD-format JSON: `{"version": ..., "data": [article, ...]}` yielded one
article at a time, so a file of any size is read in constant memory (the original `json.load`s
the whole file). Each article is decoded with the standard decoder (`raw_decode`) from a buffer
that holds only the unread part of the file; errors carry the file's line:column."""

import codecs
import json

import tensorflow as tf

_WHITESPACE = " \t\n\r"
_CHUNK_BYTES = 1 << 20
_DECODER = json.JSONDecoder()  # stateless: one for every reader


class _Buffer:
    """Decoded text of a file read chunk by chunk; remembers how many characters and lines were
    dropped from the front, to turn buffer positions into the file's line:column."""

    def __init__(self, reader, path, chunk_bytes):
        self.reader, self.path, self.chunk_bytes = reader, path, chunk_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.text, self.pos, self.eof = "", 0, False
        self.dropped_lines, self.line_start = 0, 0  # line start: offset in self.text, may be < 0

    def more(self, at_least=0):
        """Reads at least `at_least` more bytes (or to the end); False at the end of the file."""
        if self.eof:
            return False
        raw = self.reader.read(max(at_least, self.chunk_bytes))
        try:
            chunk = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as error:
            raise ValueError(f"{self.path} is not UTF-8 text: {error.reason}") from None
        self.eof = not raw
        # Drop what is consumed before appending, so the buffer holds only the unread text.
        consumed = self.text[: self.pos]
        newlines = consumed.count("\n")
        if newlines:
            self.dropped_lines += newlines
            self.line_start = consumed.rindex("\n") + 1
        self.line_start -= self.pos
        self.text, self.pos = self.text[self.pos :] + chunk, 0
        return True

    def where(self, pos):
        """'line L column C' (1-based) of buffer position `pos`."""
        before = self.text[:pos]
        newlines = before.count("\n")
        start = before.rindex("\n") + 1 if newlines else self.line_start
        return f"line {self.dropped_lines + newlines + 1} column {pos - start + 1}"

    def fail(self, message, pos=None):
        at = self.where(self.pos if pos is None else pos)
        raise ValueError(f"{self.path} is not valid JSON: {message.removesuffix(' at')} at {at}")

    def peek(self):
        """The next character that is not whitespace ('' at the end), left unread."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(text) or not self.more():
                return text[pos] if pos < len(text) else ""

    def expect(self, chars):
        char = self.peek()
        if not char or char not in chars:
            self.fail(f"expected {' or '.join(repr(c) for c in chars)}, found {char or 'the end of the file'!r}")
        self.pos += 1
        return char

    def value(self):
        """Decodes the JSON value that starts at the next non-whitespace character."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                # Most likely the value runs past the buffer: read more (at least as much again,
                # so a large value costs a few re-parses, not one per chunk) and retry.
                if self.more(len(self.text) - self.pos):
                    continue
                self.fail(error.msg, error.pos)
            if end == len(self.text) and not self.eof and isinstance(value, (int, float)):
                self.more()  # a number at the buffer's end may go on in the next chunk
                continue
            self.pos = end
            return value


def iter_squad_articles(path, chunk_bytes=_CHUNK_BYTES):
    """Yields the articles of the SQuAD file at `path` in order (any local or tf.io.gfile path).

    Raises ValueError naming the file for an empty file, invalid JSON (with line:column) and a
    top level that is not an object with a "data" list; FileNotFoundError for a missing file.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"SQuAD file {path} does not exist")
    with tf.io.gfile.GFile(path, "rb") as reader:
        buffer = _Buffer(reader, path, chunk_bytes)
        first = buffer.peek()
        if not first:
            raise ValueError(f"{path} is empty: expected SQuAD JSON {{\"version\": ..., \"data\": [...]}}")
        if first != "{":
            raise ValueError(f"{path} is not a SQuAD file: the top level is not a JSON object with a \"data\" list")
        buffer.pos += 1
        seen_data = False
        if buffer.peek() == "}":
            buffer.pos += 1
        else:
            while True:
                buffer.peek()
                if buffer.text[buffer.pos : buffer.pos + 1] != '"':
                    buffer.fail("expected a property name in double quotes")
                key = buffer.value()
                buffer.expect(":")
                if key == "data":
                    if seen_data:
                        raise ValueError(f'{path} is not a SQuAD file: it has two "data" lists')
                    seen_data = True
                    if buffer.peek() != "[":
                        raise ValueError(f'{path} is not a SQuAD file: "data" is not a list')
                    buffer.pos += 1
                    if buffer.peek() == "]":
                        buffer.pos += 1
                    else:
                        while True:
                            yield buffer.value()
                            if buffer.expect(",]") == "]":
                                break
                else:
                    buffer.value()
                if buffer.expect(",}") == "}":
                    break
        if buffer.peek():
            buffer.fail("extra data after the top-level object")
        if not seen_data:
            raise ValueError(f'{path} is not a SQuAD file: no "data" list at the top level')
