"""`BertConfig`: the model hyper-parameters, with the original `bert_config.json` names.

This is the one place where the configuration is named: the layers and models take the same
argument names (see `BertConfig.encoder_kwargs`), and released configs load unchanged.
"""

import copy
import dataclasses
import json
import os
import warnings
from typing import Any

from bert_tf.io_utils import atomic_write

# Activation names accepted in `hidden_act`. "gelu" is the tanh approximation exactly as the
# original release computes it (modeling.gelu); "gelu_exact" is the erf form.
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")

_POSITIVE_INT_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_PROBABILITY_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob")
# What a bert_config.json must give: the sizes, which no default can guess (a missing one would
# silently build BERT-Base's). The others default to the values of every released config.
REQUIRED_FIELDS = _POSITIVE_INT_FIELDS


def _one_edit_apart(a, b):
    """Whether `a` becomes `b` by one insertion, deletion, substitution or swap of neighbours
    (case ignored)."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


@dataclasses.dataclass
class BertConfig:
    """Hyper-parameters of a BERT model (defaults are BERT-Base's, as in the original release).

    Keys found in a released `bert_config.json` that are not model hyper-parameters (for example
    `directionality`, `pooler_fc_size`, `pooler_type`) are kept in `extra` and written back out,
    so a config survives a load/save round trip byte-for-byte in content.
    """

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    # The largest sequence length the model can take; position embeddings are this long.
    max_position_embeddings: int = 512
    # Segment vocabulary size. The released checkpoints use 2; the original default is 16.
    type_vocab_size: int = 16
    # Std of the truncated normal (cut at 2 std) used for every kernel and embedding table.
    initializer_range: float = 0.02
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in _POSITIVE_INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}")
        for name in _PROBABILITY_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"BertConfig.{name} must be in [0, 1), got {value!r}")
        if not isinstance(self.initializer_range, (int, float)) or self.initializer_range <= 0:
            raise ValueError(
                f"BertConfig.initializer_range must be positive, got {self.initializer_range!r}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(
                f"BertConfig.hidden_act {self.hidden_act!r} is not supported; "
                f"expected one of {', '.join(ACTIVATIONS)}"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig.hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )

    @classmethod
    def field_names(cls):
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "extra")

    def forward_differences(self, other: "BertConfig") -> list:
        """The fields of what the model computes (sizes, activation; not dropout or the
        initializer's range, which leave its weights readable as they are) that differ from
        `other`'s, in field order."""
        forward = [name for name in self.field_names() if "dropout" not in name and name != "initializer_range"]
        return [name for name in forward if getattr(self, name) != getattr(other, name)]

    @classmethod
    def misspelt_keys(cls, json_object: dict) -> list:
        """(key, field) for each unknown key one edit away from a field name (`num_hidden_layer`,
        `hidden_size ` ...): probably meant as that field, which then takes its default."""
        fields = cls.field_names()
        return [(k, f) for k in json_object if k not in fields for f in fields if _one_edit_apart(k, f)]

    @classmethod
    def from_dict(cls, json_object: dict) -> "BertConfig":
        """Builds a config from a dict of `bert_config.json` keys; unknown keys go to `extra`
        (Google's configs carry some). Every size field (`REQUIRED_FIELDS`) must be there; a
        missing one is a ValueError naming it (and a key one edit away from it, if any)."""
        if not isinstance(json_object, dict):
            raise ValueError(f"a BERT config must be a JSON object, got {type(json_object).__name__}")
        known = set(cls.field_names())
        misspelt = dict((f, k) for k, f in cls.misspelt_keys(json_object))
        missing = [name for name in REQUIRED_FIELDS if name not in json_object]
        if missing:
            hints = "".join(f" ('{misspelt[name]}' is a misspelling?)" for name in missing if name in misspelt)
            raise ValueError(f"a BERT config needs {', '.join(repr(m) for m in missing)}{hints}")
        kwargs = {k: v for k, v in json_object.items() if k in known}
        extra = {k: copy.deepcopy(v) for k, v in json_object.items() if k not in known}
        return cls(**kwargs, extra=extra)

    @classmethod
    def from_json_file(cls, json_file: str) -> "BertConfig":
        """The config of a `bert_config.json`. A missing size field is a ValueError naming the
        file and the field; an unknown key one edit away from a field (which then takes its
        default) is a UserWarning naming both."""
        if os.path.isdir(json_file):
            raise ValueError(f"BERT config file {json_file!r} is a directory")
        if not os.path.isfile(json_file):
            raise FileNotFoundError(f"BERT config file {json_file!r} does not exist")
        with open(json_file, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"BERT config file {json_file!r} is not valid JSON: {e}") from e
        try:
            config = cls.from_dict(data)
        except (ValueError, TypeError) as e:
            raise ValueError(f"BERT config file {json_file!r}: {e}") from e
        for key, field in cls.misspelt_keys(data):
            warnings.warn(
                f"BERT config file {json_file!r} has the unknown key '{key}', one edit away from '{field}' "
                f"(which takes its default, {getattr(config, field)!r}): a misspelling?",
                stacklevel=2,
            )
        return config

    def to_dict(self) -> dict:
        out = {name: getattr(self, name) for name in self.field_names()}
        out.update(copy.deepcopy(self.extra))
        return out

    def to_json_string(self) -> str:
        # Same layout as the original's BertConfig.to_json_string.
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file: str) -> None:
        """Writes the config atomically (temporary file in the same folder, then rename)."""
        with atomic_write(json_file) as f:
            f.write(self.to_json_string())

    def encoder_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `BertEncoder` (the same names as the JSON keys)."""
        return {name: getattr(self, name) for name in self.field_names()}

    def check_seq_length(self, seq_length: int) -> None:
        """A ValueError unless sequences of `seq_length` fit the position embeddings (the
        original's check, in its words)."""
        if seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Cannot use sequence length {seq_length} because the BERT model was only trained up to "
                f"sequence length {self.max_position_embeddings} (max_position_embeddings)"
            )

    def check_vocab_size(self, num_tokens: int, vocab_file: str) -> None:
        """A ValueError unless a vocab of `num_tokens` fits the word embeddings: every id must
        have a row (a table larger than the vocab is fine: some releases pad it)."""
        if num_tokens > self.vocab_size:
            raise ValueError(
                f"vocab {vocab_file!r} has {num_tokens} tokens but the model's vocab_size is {self.vocab_size}: "
                "they were not made for each other"
            )
