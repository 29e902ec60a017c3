"""Hugging Face BERT folders, both ways: `config.json` <-> BertConfig, the tokenizer's settings
(`vocab.txt`, `tokenizer_config.json`'s `do_lower_case`), the run record a fine-tuned folder
stands for, loading its weights into our models, and writing one of our models as such a folder.
The weights' names are `hf_weights`'.

What this package cannot compute is refused before any work, with the file, field and value: a
`position_embedding_type` other than "absolute", a `hidden_act` we lack, a decoder, another
`layer_norm_eps`, untied output embeddings, a `model_type` or class that is not one of BERT's
models here, a tokenizer other than BERT's WordPiece one.

Errors are ValueErrors (FileNotFoundErrors) whose message starts with the file at fault, or with
the setting (`do_lower_case=...`) that disagrees with it.
"""

import dataclasses
import json
import math
import os
import shutil

from bert_tf.checkpoints import hf_weights, sentence_transformers
from bert_tf.checkpoints.hf_weights import ENCODER, MASKED_LM, PRETRAINER
from bert_tf.config import BertConfig
from bert_tf.errors import shown
from bert_tf.io_utils import read_json_object, staging_folder, swap_in_folder
from bert_tf.layers.common import LAYER_NORM_EPSILON
from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.runs import registry
from bert_tf.runs.record import RunRecord
from bert_tf.tokenization import load_vocab

CONFIG = "config.json"
VOCAB = "vocab.txt"
TOKENIZER_CONFIG = "tokenizer_config.json"

# transformers' BertConfig defaults: what it reads for a field config.json leaves out.
_DEFAULTS = dict(
    vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
    hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=512,
    type_vocab_size=2, initializer_range=0.02,
)
# transformers' activations -> ours. Its "gelu" is the erf form; the original release's tanh
# approximation (our "gelu") is its "gelu_new", also called "gelu_pytorch_tanh".
_ACTIVATIONS = {
    "gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "relu": "relu", "tanh": "tanh",
    "linear": "linear",
}
_WRITTEN_ACTIVATIONS = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}
# Settings that change what the model computes: the one value our layers compute (the default).
_FIXED = {
    "position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False,
    "tie_word_embeddings": True, "layer_norm_eps": LAYER_NORM_EPSILON,
}
# The fields without which the weights cannot be read: their shapes (and how the hidden size
# splits into heads). transformers writes them all; a default for one (its 768 hidden units, 12
# heads) would only turn into a puzzling shape mismatch.
_REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "max_position_embeddings", "type_vocab_size")
# The fields that decide what loaded weights compute (the others: dropout, initialisation).
_PROBLEM_TYPES = {"single_label_classification": "single", "regression": "regression",
                  "multi_label_classification": "multi"}
_TOKENIZERS = ("BertTokenizer", "BertTokenizerFast")
_TRANSFORMERS = "transformers_version"  # in every config.json transformers saves
# What `write_folder` writes: its files, and the keys of its JSON files (None: not JSON).
_WRITTEN_KEYS = {
    CONFIG: {"architectures", "model_type", *_DEFAULTS, "layer_norm_eps", "pad_token_id", "id2label", "label2id",
             "problem_type"},
    TOKENIZER_CONFIG: {"do_lower_case", "tokenizer_class", "model_max_length"},
    hf_weights.SAFETENSORS: None,
    VOCAB: None,
    # A sentence embedder's modules (`sentence_transformers.module_files`); its module folders below.
    sentence_transformers.MODULES_FILE: None,
    sentence_transformers.TRANSFORMER_CONFIG: {"max_seq_length", "do_lower_case"},
    sentence_transformers.MODEL_CONFIG: {"prompts", "default_prompt_name", "similarity_fn_name"},
}
_WRITTEN_FOLDERS = (sentence_transformers.POOLING_FOLDER, sentence_transformers.NORMALIZE_FOLDER)


def is_hf_folder(path):
    """Whether `path` is a folder laid out as Hugging Face's (a `config.json`, or one of its
    weights files): one with a file missing is still one, for `read_config` and the loaders to
    say what is missing."""
    markers = (CONFIG, hf_weights.SAFETENSORS, hf_weights.TF_H5, hf_weights.PYTORCH_BIN)
    return bool(path) and os.path.isdir(path) and any(os.path.isfile(os.path.join(path, m)) for m in markers)


def _read_json(path, what):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{os.path.dirname(path)}: no {os.path.basename(path)} ({what})")
    return read_json_object(path)


@dataclasses.dataclass(frozen=True)
class FolderConfig:
    """What a folder's config.json says."""

    bert_config: BertConfig
    architecture: str | None  # transformers' class of its weights (None: not said)
    labels: tuple = ()  # id2label's names in id order (a fine-tuned classifier's or tagger's)
    label_kind: str | None = None  # problem_type as a run record's label_kind (None: not said)


def read_config(folder):
    """The FolderConfig of the Hugging Face folder `folder`; anything we cannot compute is a
    ValueError naming config.json, the field and its value."""
    path = os.path.join(folder, CONFIG)
    values = _read_json(path, "a Hugging Face folder's model config")

    def refuse(field, why):
        return ValueError(f"{path}: {field}={values.get(field)!r} {why}")

    if values.get("model_type", "bert") != "bert":
        raise refuse("model_type", "is not BERT")
    architectures = values.get("architectures") or [None]
    known = (ENCODER, PRETRAINER, MASKED_LM, *task_architectures())
    if len(architectures) != 1 or architectures[0] not in (None, *known):
        raise refuse("architectures", f"is not one model of {', '.join(known)}")
    for field, value in _FIXED.items():
        given = values.get(field, value)
        number = isinstance(value, float) and isinstance(given, (int, float))
        if given != value and not (number and math.isclose(given, value, rel_tol=1e-6)):
            raise refuse(field, f"is not supported (only {value!r})")
    missing = [name for name in _REQUIRED if name not in values]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)} (needed to read the weights; transformers always "
                         "writes them)")
    if values.get("hidden_act", "gelu") not in _ACTIVATIONS:
        raise refuse("hidden_act", f"is not supported (one of {', '.join(_ACTIVATIONS)})")
    fields = {name: values.get(name, default) for name, default in _DEFAULTS.items()}
    fields["hidden_act"] = _ACTIVATIONS[fields["hidden_act"]]
    try:
        config = BertConfig(**fields)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: {e}") from None
    id2label = values.get("id2label") or {f"{i}": f"LABEL_{i}" for i in range(values.get("num_labels", 0))}
    if not isinstance(id2label, dict) or set(id2label) != {f"{i}" for i in range(len(id2label))}:
        raise refuse("id2label", "does not number the labels 0, 1, ...")
    labels = tuple(id2label[f"{i}"] for i in range(len(id2label)))
    problem = values.get("problem_type")
    if problem is not None and problem not in _PROBLEM_TYPES:
        raise refuse("problem_type", f"is not one of {', '.join(_PROBLEM_TYPES)}")
    return FolderConfig(config, architectures[0], labels, _PROBLEM_TYPES.get(problem))


def tokenizer_casing(folder):
    """`do_lower_case` of the folder's tokenizer_config.json (True, transformers' default, when
    there is none); a tokenizer other than BERT's WordPiece one, or settings our tokenizer does
    not have, are a ValueError naming the file and field."""
    path = os.path.join(folder, TOKENIZER_CONFIG)
    values = _read_json(path, "") if os.path.isfile(path) else {}
    lower = values.get("do_lower_case", True)
    checks = (
        ("tokenizer_class", values.get("tokenizer_class") in (None, *_TOKENIZERS), f"is not one of {_TOKENIZERS}"),
        ("do_lower_case", isinstance(lower, bool), "is not true or false"),
        ("do_basic_tokenize", values.get("do_basic_tokenize", True) is True, "is not supported (only true)"),
        ("tokenize_chinese_chars", values.get("tokenize_chinese_chars", True) is True, "is not supported (only true)"),
        # Ours strips accents exactly when it lower-cases, as the original's (and transformers' default).
        ("strip_accents", values.get("strip_accents") in (None, lower), f"is not supported with do_lower_case={lower}"),
    )
    for field, ok, why in checks:
        if not ok:
            raise ValueError(f"{path}: {field}={values.get(field)!r} {why}")
    return lower


def same_model(config, folder_config, what):
    """A ValueError unless the BertConfig `config` (`what` gave it) computes what the folder's
    does (their sizes and activation)."""
    differ = [f"{n} {getattr(config, n)!r} vs {getattr(folder_config, n)!r}"
              for n in config.forward_differences(folder_config)]
    if differ:
        raise ValueError(f"{what} does not match the Hugging Face folder's {CONFIG}: {', '.join(differ)}")


@dataclasses.dataclass(frozen=True)
class FolderSettings:
    """What a script reads from a folder given as its checkpoint."""

    config: BertConfig
    vocab_file: str | None  # None: the folder has none and none was given
    do_lower_case: bool


def folder_settings(folder, config=None, config_file=None, needs_vocab=False, vocab_file=None, do_lower_case=None,
                    setting="init_checkpoint"):
    """The config (the folder's, or `config` when given: read from `config_file`, it must match),
    vocabulary (`vocab_file`, else the folder's vocab.txt; without either, None or, when
    `needs_vocab`, an error) and casing (the folder's; a `do_lower_case` given must be it) of the
    Hugging Face folder `folder`. Errors start with the setting at fault: `setting` (which gave
    the folder), bert_config_file, vocab_file or do_lower_case."""
    try:
        found, lower = read_config(folder), tokenizer_casing(folder)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{setting}: {e}") from None
    except ValueError as e:
        raise ValueError(f"{setting}: {e}") from None
    if config is not None:
        try:
            same_model(config, found.bert_config, "it")
        except ValueError as e:
            raise ValueError(f"{shown.bert_config_file}={config_file}: {e}") from None
    if do_lower_case is not None and do_lower_case != lower:
        raise ValueError(
            f"{shown.do_lower_case}={do_lower_case}, but {os.path.join(folder, TOKENIZER_CONFIG)} has "
            f"{shown.do_lower_case}={lower}"
        )
    if vocab_file:
        check_same_vocab(vocab_file, folder)
    vocab = vocab_file or (os.path.join(folder, VOCAB) if os.path.isfile(os.path.join(folder, VOCAB)) else None)
    if vocab is None and needs_vocab:  # transformers 5 saves the vocabulary in tokenizer.json only
        raise FileNotFoundError(
            f"{shown.vocab_file} is required ({folder} has no {VOCAB}: transformers 5 keeps the vocabulary in "
            "tokenizer.json only; write its model.vocab out one token a line, in id order)"
        )
    return FolderSettings(config or found.bert_config, vocab, lower)


def check_same_vocab(vocab_file, folder):
    """A ValueError starting `vocab_file=...` unless `vocab_file` holds the tokens of `folder`'s
    vocab.txt (when it has one) in the same order: the rows of the folder's word embeddings are
    its tokens, and another list gives other features silently. Tokens are compared as the
    tokenizer reads them (`tokenization.load_vocab` strips each line: CRLF or LF, spaces around
    a token do not matter)."""
    own = os.path.join(folder, VOCAB)
    if not os.path.isfile(own):
        return
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"{shown.vocab_file}={vocab_file}: no such file")
    try:
        given = list(load_vocab(vocab_file))
    except ValueError as e:  # e.g. a token twice
        raise ValueError(f"{shown.vocab_file}={vocab_file}: {e}") from None
    found = list(load_vocab(own))
    if given == found:
        return
    where = [f"{len(given)} tokens vs {len(found)}"] if len(given) != len(found) else []
    line = next((i for i, (a, b) in enumerate(zip(given, found, strict=False)) if a != b), None)
    if line is not None:
        where.append(f"line {line + 1} is {given[line]!r} vs {found[line]!r}")
    raise ValueError(f"{shown.vocab_file}={vocab_file} is not the vocabulary of {own}: {', '.join(where)}")


def task_architectures():
    return [kind.hf_architecture for kind in registry.KINDS.values() if kind.hf_architecture]


def run_record(folder, found=None):
    """The run record of a fine-tuned folder (`found`: its FolderConfig, read when not given):
    its kind from `architectures`, labels from `id2label` (transformers reads one label as a
    regression), casing from tokenizer_config.json; None for a folder of another class. A kind
    that reads other programs' folders as its runs (`TaskKind.folder_record`: a sentence-transformers
    folder is a sentence embedder's) is asked first."""
    found = found or read_config(folder)
    for kind in registry.KINDS.values():
        record = kind.read_folder(folder, lambda: tokenizer_casing(folder), found.bert_config)
        if record is not None:
            return record
    kind = registry.of_hf_architecture(found.architecture)
    if kind is None:
        return None
    values = {}
    if kind.label_kinds:
        label_kind = found.label_kind or ("regression" if len(found.labels) == 1 else None)
        label_kind = label_kind if label_kind in kind.label_kinds else kind.label_kinds[0]
        labels = () if label_kind == "regression" else found.labels or ("LABEL_0", "LABEL_1")
        values = {"labels": labels, "label_kind": label_kind}
    name = os.path.basename(os.path.normpath(folder))
    return RunRecord(kind=kind.name, task_name=name, do_lower_case=tokenizer_casing(folder), **values)


def folder_model(folder):
    """The model the folder holds, unloaded: its task kind's model, else a BertPretrainer when it
    has both pre-training heads, else a BertEncoder. Returns (model, run record or None)."""
    found = read_config(folder)
    encoder = BertEncoder.from_bert_config(found.bert_config)
    record = run_record(folder, found)
    if record is not None:
        return record.task_kind.build_model(record, encoder), record
    _, stored = hf_weights.read_weights(folder)
    heads = ("cls.predictions.bias", "cls.seq_relationship.weight")
    return (BertPretrainer(encoder) if all(h in stored for h in heads) else encoder), None


def load(model, folder):
    """Loads the Hugging Face folder `folder` into `model` (`hf_weights.load_weights`), after
    checking that its config.json computes what `model` does. Returns the LoadReport."""
    found = read_config(folder)
    same_model(getattr(model, "encoder", model).bert_config(), found.bert_config, f"the {type(model).__name__}")
    return hf_weights.load_weights(model, folder, found.architecture)


# ---------------------------------------------------------------------------------------------
# Writing


def config_json(model, bert_config=None, record=None, pad_token_id=0):
    """config.json's fields for `model` (fine-tuned as `record` says, when it is a task model):
    the BertConfig's, transformers' class, and for a model with labels their names."""
    config = bert_config or getattr(model, "encoder", model).bert_config()
    out = {"architectures": [hf_weights.architecture_of(model)], "model_type": "bert"}
    out.update({name: getattr(config, name) for name in _DEFAULTS})
    out.update(hidden_act=_WRITTEN_ACTIVATIONS[config.hidden_act], layer_norm_eps=LAYER_NORM_EPSILON,
               pad_token_id=pad_token_id)
    kind = registry.of_model(model)
    if kind is None or not kind.label_kinds:
        return out
    outputs = getattr(model, kind.head_layer).dense.kernel.shape[-1]
    labels = list(record.labels) if record is not None and record.labels else []
    labels = labels if len(labels) == outputs else [f"LABEL_{i}" for i in range(outputs)]
    out["id2label"] = {str(i): label for i, label in enumerate(labels)}
    out["label2id"] = {label: i for i, label in enumerate(labels)}
    label_kind = record.label_kind if record is not None else None
    problem = [problem for problem, ours in _PROBLEM_TYPES.items() if ours == label_kind]
    if problem:
        out["problem_type"] = problem[0]
    return out


def _not_written(folder, name):
    """Why the entry `name` of `folder` is not one `write_folder` wrote (None when it is): a JSON
    file of ours holds only the keys it writes; transformers' own config.json always adds
    `transformers_version` (named first), so a folder saved by it, or downloaded from the Hub, is
    never taken for ours."""
    path = os.path.join(folder, name)
    if name in _WRITTEN_FOLDERS and os.path.isdir(path):
        return next((f"{name}/{entry}" for entry in sorted(os.listdir(path)) if entry != "config.json"), None)
    if name not in _WRITTEN_KEYS or not os.path.isfile(path):
        return name
    if _WRITTEN_KEYS[name] is None:
        return None
    try:
        extra = sorted(set(read_json_object(path)) - _WRITTEN_KEYS[name], key=lambda k: (k != _TRANSFORMERS, k))
    except ValueError:
        return f"{name} (not JSON)"
    return f"{name} with {extra[0]}" if extra else None


def check_output_folder(folder):
    """Whether writing the Hugging Face folder `folder` replaces one that `write_folder` wrote
    before (True: its config.json and nothing it does not write) or makes it anew (False: absent
    or empty). Any other folder is a ValueError naming it and (the first of) its entries:
    replacing it would delete files that are not ours, and leave another model under its name."""
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise ValueError(f"{folder} is a file, not a folder")
    entries = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    foreign = [why for why in (_not_written(folder, name) for name in entries) if why]
    if entries and not foreign and CONFIG not in entries:  # some of our files, but not a folder we wrote
        foreign = entries
    if foreign:
        more = f", ... ({len(foreign) - 5} more)" if len(foreign) > 5 else ""
        raise ValueError(
            f"{folder} is not empty and not the output of an earlier conversion (it holds {', '.join(foreign[:5])}"
            f"{more}): name a new folder"
        )
    return bool(entries)


def write_folder(model, folder, vocab_file, do_lower_case, record=None, bert_config=None):
    """Writes `model` (a BertEncoder, BertPretrainer or task model; `record`: its run record,
    for the label names) as the Hugging Face folder `folder`: config.json, model.safetensors,
    vocab.txt (a copy of `vocab_file`) and tokenizer_config.json, and the files its kind needs
    beside them (`TaskKind.files_beside`: a sentence embedder's sentence-transformers modules). The
    files are written into a
    temporary folder beside it, renamed onto `folder` when complete (a folder this function
    wrote before is replaced; any other that is not empty is refused, `check_output_folder`).
    Returns transformers' class of the model written."""
    check_output_folder(folder)
    config = bert_config or getattr(model, "encoder", model).bert_config()
    with open(vocab_file, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    config.check_vocab_size(len(tokens), vocab_file)
    tensors = hf_weights.model_tensors(model)
    pad = tokens.index("[PAD]") if "[PAD]" in tokens else 0
    tokenizer = {"do_lower_case": bool(do_lower_case), "tokenizer_class": _TOKENIZERS[0],
                 "model_max_length": config.max_position_embeddings}
    kind = registry.of_model(model)
    files = {CONFIG: config_json(model, config, record, pad), TOKENIZER_CONFIG: tokenizer,
             **(kind.files_beside(model, record, config) if kind is not None else {})}

    def write(staging):
        hf_weights.write_safetensors(tensors, os.path.join(staging, hf_weights.SAFETENSORS))
        for name, values in files.items():  # None: a folder without a file
            os.makedirs(os.path.join(staging, name if values is None else os.path.dirname(name)), exist_ok=True)
            if values is not None:
                with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
                    json.dump(values, f, indent=2, sort_keys=True)
                    f.write("\n")
        shutil.copyfile(vocab_file, os.path.join(staging, VOCAB))

    _replace_folder(folder, write)
    return hf_weights.architecture_of(model)


def _replace_folder(folder, write):
    """`write(staging)` fills a temporary folder beside `folder`, then renamed onto it (an
    existing one moved aside first, then deleted). Temporaries of writers that died are removed."""
    folder = os.path.abspath(folder)
    staging = staging_folder(folder)
    try:
        write(staging)
        swap_in_folder(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
