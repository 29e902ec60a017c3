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
    """Hyper-parameters of a BERT model, named and defaulted as in the original release.

    The field names are the keys of the original `bert_config.json`, and the defaults are those of
    the original release's `BertConfig`: BERT-Base's sizes, except `type_vocab_size`, whose
    original default is 16 where the released checkpoints use 2. Keys found in a released
    `bert_config.json` that are not model hyper-parameters (for example `directionality`,
    `pooler_fc_size`, `pooler_type`) are kept in `extra` and written back out, so a config survives
    a load/save round trip byte-for-byte in content.

    Args:
        vocab_size: int. The number of rows of the word-embedding table (every token id must have
            one).
        hidden_size: int. The width of the embeddings and of every Transformer layer's output.
            Must be a multiple of `num_attention_heads`.
        num_hidden_layers: int. The number of Transformer layers.
        num_attention_heads: int. The number of attention heads in each layer.
        intermediate_size: int. The width of each layer's feed-forward (intermediate) layer.
        hidden_act: str. The feed-forward activation, one of `ACTIVATIONS`: "gelu" (the tanh
            approximation, exactly as the original release computes it), "gelu_exact" (the erf
            form), "relu", "tanh" or "linear".
        hidden_dropout_prob: float. The dropout rate on the embeddings and on each sublayer's
            output, in [0, 1).
        attention_probs_dropout_prob: float. The dropout rate on the attention probabilities, in
            [0, 1).
        max_position_embeddings: int. The largest sequence length the model can take; the
            position-embedding table has this many rows.
        type_vocab_size: int. The segment vocabulary size. The released checkpoints use 2; the
            original default is 16.
        initializer_range: float. The standard deviation of the truncated normal (cut at 2
            standard deviations) used for every kernel and embedding table. Must be positive.
        extra: dict. The keys of a `bert_config.json` that are not fields, kept to be written
            back out. Empty by default.

    Raises:
        ValueError: A size field (`REQUIRED_FIELDS`) is not a positive integer, a dropout
            probability is outside [0, 1), `initializer_range` is not positive, `hidden_act` is not
            one of `ACTIVATIONS`, or `hidden_size` is not a multiple of `num_attention_heads`.
    """

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 16
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
        """The names of the hyper-parameter fields, in field order.

        Returns:
            A tuple of the field names, `extra` left out.
        """
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "extra")

    def forward_differences(self, other: "BertConfig") -> list:
        """The fields of what the model computes that differ between this config and `other`.

        Those fields are the sizes and the activation; dropout and the initializer's range are
        left out, as they leave the model's weights readable as they are.

        Args:
            other: The BertConfig to compare with.

        Returns:
            A list of the differing field names, in field order (empty when none differs).
        """
        forward = [name for name in self.field_names() if "dropout" not in name and name != "initializer_range"]
        return [name for name in forward if getattr(self, name) != getattr(other, name)]

    @classmethod
    def misspelt_keys(cls, json_object: dict) -> list:
        """Finds the unknown keys of a config dict that are probably misspelt field names.

        A key is taken as misspelt when it is not a field name but one edit away from one
        (`num_hidden_layer`, `hidden_size ` ...): one insertion, deletion, substitution or swap of
        neighbours, case ignored (a key that differs from a field only in case counts too). Such
        a key was probably meant as that field, which then takes its default.

        Args:
            json_object: A dict of `bert_config.json` keys.

        Returns:
            A list of `(key, field)` pairs, one for each unknown key and each field it is one edit
            away from.
        """
        fields = cls.field_names()
        return [(k, f) for k in json_object if k not in fields for f in fields if _one_edit_apart(k, f)]

    @classmethod
    def from_dict(cls, json_object: dict) -> "BertConfig":
        """Builds a config from a dict of `bert_config.json` keys.

        Unknown keys go to `extra` (Google's configs carry some), copied.

        Args:
            json_object: A dict of `bert_config.json` keys. Every size field (`REQUIRED_FIELDS`)
                must be there.

        Returns:
            The BertConfig.

        Raises:
            ValueError: `json_object` is not a dict; a size field is missing (the message names
                it, and a key one edit away from it, if any); or a value is invalid (see the
                class).
        """
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
        """Reads the config of a `bert_config.json`.

        An unknown key one edit away from a field (which then takes its default) is a UserWarning
        naming both.

        Args:
            json_file: The path of a `bert_config.json`.

        Returns:
            The BertConfig.

        Raises:
            FileNotFoundError: `json_file` does not exist.
            ValueError: `json_file` is a directory or not valid JSON, or its content is not a valid
                config (a missing size field: the message names the file and the field).
        """
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
        """The config as a dict of `bert_config.json` keys.

        Returns:
            A dict of every field's value, and the keys of `extra` (copied).
        """
        out = {name: getattr(self, name) for name in self.field_names()}
        out.update(copy.deepcopy(self.extra))
        return out

    def to_json_string(self) -> str:
        """The config as the text of a `bert_config.json`.

        The same layout as the original's `BertConfig.to_json_string`: keys sorted, indented by 2.

        Returns:
            The JSON text of `to_dict()`, ending with a newline.
        """
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file: str) -> None:
        """Writes the config as a `bert_config.json`, atomically.

        The text (`to_json_string()`) goes to a temporary file in the same folder, which is then
        renamed to `json_file`; a missing folder is created.

        Args:
            json_file: The path to write.
        """
        with atomic_write(json_file) as f:
            f.write(self.to_json_string())

    def encoder_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `BertEncoder` for this config.

        Returns:
            A dict of every field's value by field name (the same names as the JSON keys), `extra`
            left out.
        """
        return {name: getattr(self, name) for name in self.field_names()}

    def check_seq_length(self, seq_length: int) -> None:
        """Checks that sequences of `seq_length` fit the position embeddings.

        The original's check, in its words.

        Args:
            seq_length: int. The sequence length to be used.

        Raises:
            ValueError: `seq_length` is above `max_position_embeddings`.
        """
        if seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Cannot use sequence length {seq_length} because the BERT model was only trained up to "
                f"sequence length {self.max_position_embeddings} (max_position_embeddings)"
            )

    def check_vocab_size(self, num_tokens: int, vocab_file: str) -> None:
        """Checks that a vocab of `num_tokens` fits the word embeddings.

        Every id must have a row; a table larger than the vocab is fine (some releases pad it).

        Args:
            num_tokens: int. The number of tokens of the vocab.
            vocab_file: The vocab's path (named in the message).

        Raises:
            ValueError: `num_tokens` is above `vocab_size`.
        """
        if num_tokens > self.vocab_size:
            raise ValueError(
                f"vocab {vocab_file!r} has {num_tokens} tokens but the model's vocab_size is {self.vocab_size}: "
                "they were not made for each other"
            )
