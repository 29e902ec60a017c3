"""Per-token hidden states of chosen layers, as the original `extract_features.py` writes them.

The library half of `run_scripts/extract_features.py`: reading `A` / `A ||| B` lines, running the
encoder in batches, and the original's JSON lines. Streams: memory does not grow with the input.
"""

import collections
import dataclasses
import itertools
import json
import re

import numpy as np

from bert_tf.data.sentence_pairs import pack_tokens
from bert_tf.models.bert_encoder import INPUT_NAMES

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


def extract_features(encoder, tokenizer, examples, seq_length, layer_indexes, batch_size=32):
    """Runs `encoder` over `examples`; yields `(example, tokens, {index: [len(tokens), hidden]})`.

    Each example is packed as the original does ([CLS] A [SEP] (B [SEP]), truncated to
    `seq_length`); the arrays hold only the real tokens' rows, in float32.
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
        layer_outputs = encoder.predict_on_batch(inputs)["encoder_outputs"]
        for row, (ex, p) in enumerate(zip(batch, packed, strict=True)):
            n = len(p.tokens)
            yield ex, p.tokens, {
                index: np.asarray(layer_outputs[index][row, :n], dtype=np.float32)
                for index in layer_indexes
            }


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
