"""Per-token hidden states of chosen layers, as the original `extract_features.py` writes them.

The library half of `run_scripts/extract_features.py`: the encoder restored from a checkpoint,
`A` / `A ||| B` lines read, the encoder run in batches (each cut to its longest sequence rounded
up to a bucket: only the real tokens' rows are written, which the padding past them does not
change), and the original's JSON lines written under a temporary name and renamed when complete.
Streams: memory does not grow with the input.
"""

import collections
import contextlib
import dataclasses
import itertools
import json
import os
import re
import time

import numpy as np
from absl import logging

from bert_tf import checkpoints
from bert_tf.data.lengths import cut_padding
from bert_tf.data.sentence_pairs import pack_tokens
from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write
from bert_tf.models.bert_encoder import INPUT_NAMES, BertEncoder

_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")


@dataclasses.dataclass
class Example:
    unique_id: int
    text_a: str
    text_b: str | None = None


def read_examples(input_file, on_invalid_utf8=None):
    """Yields one `Example` per line (blank lines too, as the original), ids from 0.

    A line `A ||| B` is a sentence pair. Lines are split on "\\n" only and decoded as UTF-8,
    undecodable bytes replaced (the tokenizer then drops them); `on_invalid_utf8(unique_id,
    replaced)` is called for each line that had any (binary input, another encoding).
    """
    with open(input_file, "rb") as f:
        for unique_id, raw in enumerate(f):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                line = raw.decode("utf-8", "replace").strip()
                if on_invalid_utf8 is not None:
                    on_invalid_utf8(unique_id, _invalid_bytes(raw))
            match = _PAIR.match(line)
            if match:
                yield Example(unique_id, match.group(1), match.group(2))
            else:
                yield Example(unique_id, line)


def _invalid_bytes(raw):
    """How many bytes of `raw` are not valid UTF-8 (the valid ones survive "ignore")."""
    return len(raw) - len(raw.decode("utf-8", "ignore").encode("utf-8"))


def check_inputs(vocab, vocab_file, input_file, max_seq_length, batch_size):
    """What extraction needs besides the model: room for [CLS] A [SEP] B [SEP], a positive batch
    size, the special tokens in `vocab` (read from `vocab_file`), an `input_file` to read. A
    ValueError (FileNotFoundError for a missing input) starting with the setting at fault."""
    if max_seq_length < 3:
        raise ValueError(f"{shown.max_seq_length}={max_seq_length} leaves no room for [CLS] A [SEP] B [SEP]")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be positive")
    missing = [t for t in ("[CLS]", "[SEP]", "[UNK]") if t not in vocab]
    if missing:
        raise ValueError(f"{shown.vocab_file}={vocab_file} lacks {', '.join(missing)}")
    if os.path.isdir(input_file):
        raise ValueError(f"input_file={input_file} is a directory, not a file")
    if not os.path.isfile(input_file):
        raise FileNotFoundError(f"input_file={input_file} does not exist")


def parse_layer_indexes(layers, num_hidden_layers):
    """"-1,-2,-3,-4" -> [-1, -2, -3, -4], each checked against the number of layers."""
    try:
        indexes = [int(x) for x in layers.split(",")]
    except ValueError:
        raise ValueError(f"layers {layers!r} must be comma-separated integers") from None
    for index in indexes:
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise ValueError(
                f"layer index {index} is out of range for a model with {num_hidden_layers} "
                f"layers (valid: {-num_hidden_layers}..{num_hidden_layers - 1})"
            )
    return indexes


def extract_features(encoder, tokenizer, examples, seq_length, layer_indexes, batch_size=32, length_bucket=None):
    """Runs `encoder` over `examples`; yields `(example, tokens, {index: [len(tokens), hidden]})`.

    Each example is packed as the original does ([CLS] A [SEP] (B [SEP]), truncated to
    `seq_length`); the arrays hold only the real tokens' rows, in float32. length_bucket: each
    batch is cut to its longest sequence rounded up to a multiple of it (None: `seq_length`). A NaN
    or an Inf in an example's layers is a FloatingPointError naming the example.
    """
    examples = iter(examples)
    while batch := list(itertools.islice(examples, batch_size)):
        packed = [
            pack_tokens(
                tokenizer.tokenize(ex.text_a),
                tokenizer.tokenize(ex.text_b) if ex.text_b else None,
                seq_length,
                tokenizer,
            )
            for ex in batch
        ]
        inputs = {
            name: np.array([getattr(p, name) for p in packed], dtype=np.int32)
            for name in INPUT_NAMES
        }
        if length_bucket is not None:
            inputs = cut_padding(inputs, length_bucket, INPUT_NAMES)
        layer_outputs = encoder.predict_on_batch(inputs)["encoder_outputs"]
        for row, (ex, p) in enumerate(zip(batch, packed, strict=True)):
            n = len(p.tokens)
            layers = {index: np.asarray(layer_outputs[index][row, :n], dtype=np.float32) for index in layer_indexes}
            bad = [index for index, values in layers.items() if not np.all(np.isfinite(values))]
            if bad:  # JSON would write them as NaN or Infinity, which no JSON reader of the original's takes
                raise FloatingPointError(f"example {ex.unique_id}: layer {bad[0]}'s outputs hold NaN or Inf: the "
                                         "model's weights overflow (check its checkpoint); nothing was written")
            yield ex, p.tokens, layers


def feature_json_line(unique_id, tokens, layers):
    """One output line in the original's format (including its `linex_index` spelling).

    Values are float32 activations rounded to 6 decimals, as the original does.
    """
    # tolist() gives the same Python floats as float(x) per element, much faster.
    rows = {index: np.asarray(values, dtype=np.float32).tolist() for index, values in layers.items()}
    features = []
    for i, token in enumerate(tokens):
        token_layers = []
        for index, values in rows.items():
            entry = collections.OrderedDict()
            entry["index"] = index
            entry["values"] = [round(x, 6) for x in values[i]]
            token_layers.append(entry)
        feature = collections.OrderedDict()
        feature["token"] = token
        feature["layers"] = token_layers
        features.append(feature)
    line = collections.OrderedDict()
    line["linex_index"] = unique_id
    line["features"] = features
    return json.dumps(line) + "\n"


def restore_encoder(bert_config, init_checkpoint, scope=None):
    """A `BertEncoder` of `bert_config`, built under `scope` (e.g. a TPU strategy's), with the
    weights of `init_checkpoint` (Google's original checkpoints or a `.keras` file). Returns
    `(encoder, names of the checkpoint's variables the encoder does not use)`; a checkpoint that
    does not fit the config is a ValueError, a missing one a FileNotFoundError."""
    with scope or contextlib.nullcontext():
        encoder = BertEncoder.from_bert_config(bert_config)
    report = checkpoints.restore(encoder, init_checkpoint)
    return encoder, list(report.unused) if report is not None else []


@dataclasses.dataclass
class Written:
    """What `write_features` did: `lines` written to `output_file` in `seconds`; how many input
    lines had invalid UTF-8 (`invalid_lines`) and how many of their bytes were replaced."""

    output_file: str
    lines: int = 0
    invalid_lines: int = 0
    invalid_bytes: int = 0
    seconds: float = 0.0

    def report(self, prefix=""):
        """`(absl logging level, line)` pairs; settings are named `{prefix}name` (a script
        passes "--" to name its flags)."""
        lines = []
        if self.invalid_lines:
            lines.append(
                (
                    logging.WARNING,
                    f"Replaced {self.invalid_bytes} invalid UTF-8 byte(s) in {self.invalid_lines} line(s) of "
                    f"{prefix}input_file",
                )
            )
        return lines + [(logging.INFO, f"Wrote {self.lines} lines to {self.output_file} in {self.seconds:.1f} s")]


def write_features(
    encoder, tokenizer, input_file, output_file, seq_length, layer_indexes, batch_size=32, log=None, prefix="",
    length_bucket=None,
):
    """One JSON line in `output_file` per line of `input_file` (`read_examples`,
    `extract_features` with `length_bucket`, `feature_json_line`), written under a temporary name and renamed when
    complete: a failed write (a full disk) raises its OSError and leaves no output. Returns
    `Written`.

    `log(absl logging level, line)` is told of the progress as it happens: the first five
    examples' tokens, every thousandth line, the first input line with invalid UTF-8 (naming
    the setting as `{prefix}input_file`).
    """
    start, written = time.time(), Written(output_file)
    log = log or (lambda level, line: None)

    def invalid_utf8(unique_id, replaced):
        if not written.invalid_lines:
            log(
                logging.WARNING,
                f"{prefix}input_file={input_file}: line {unique_id + 1} is not valid UTF-8 (binary input, another "
                "encoding?); its invalid bytes are replaced and then dropped by the tokenizer",
            )
        written.invalid_lines += 1
        written.invalid_bytes += replaced

    examples = read_examples(input_file, invalid_utf8)
    results = extract_features(encoder, tokenizer, examples, seq_length, layer_indexes, batch_size, length_bucket)
    with atomic_write(output_file) as writer:
        for example, tokens, layers in results:
            if example.unique_id < 5:
                log(logging.INFO, f"unique_id: {example.unique_id} tokens: {' '.join(tokens)}")
            writer.write(feature_json_line(example.unique_id, tokens, layers))
            written.lines += 1
            if written.lines % 1000 == 0:
                log(logging.INFO, f"{written.lines} lines, {written.lines / (time.time() - start):.1f} lines/s")
    written.seconds = time.time() - start
    return written
