"""sentence-transformers folders: what their modules say, read, and the files that describe an
embedding model's modules, written.

Such a folder is a Hugging Face BERT folder (its Transformer module: `config.json`, weights,
vocabulary, `sentence_bert_config.json` with the max length) listed in `modules.json` with a
Pooling module (`1_Pooling/config.json`: one `pooling_mode_*` set) and optionally a Normalize
module (no file of its own). The BERT module's weights are read and written by `bert_tf.checkpoints.hf`;
a module this package cannot compute (a Dense projection, another transformer, a prompt, two
poolings at once) is refused, named, before anything is loaded.
"""

import dataclasses
import json
import os

from bert_tf.errors import shown
from bert_tf.io_utils import read_json_object
from bert_tf.models.bert_sentence_embedder import BertSentenceEmbedder

MODULES_FILE = "modules.json"
TRANSFORMER_CONFIG = "sentence_bert_config.json"
MODEL_CONFIG = "config_sentence_transformers.json"
POOLING_FOLDER = "1_Pooling"
NORMALIZE_FOLDER = "2_Normalize"
TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
# Our pooling names -> the Pooling module's config keys.
POOLING_KEYS = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
    "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens",
}
# The Pooling module's modes we do not compute (all false in a folder we read).
_OTHER_POOLING_KEYS = ("pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


def is_sentence_transformers_folder(path):
    """Whether `path` is a folder with a `modules.json` (sentence-transformers' layout)."""
    return bool(path) and os.path.isfile(os.path.join(path, MODULES_FILE))


@dataclasses.dataclass(frozen=True)
class Modules:
    """What a sentence-transformers folder's modules say."""

    transformer: str  # the folder of the BERT module (a Hugging Face folder)
    pooling: str  # one of POOLING_KEYS
    normalize: bool
    max_seq_length: int | None  # sentence_bert_config.json's (None: not said)
    do_lower_case: bool  # sentence_bert_config.json's: the text lower-cased before tokenizing


def _module_list(folder):
    path = os.path.join(folder, MODULES_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            modules = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read {path}: {e}") from None
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m for m in modules):
        raise ValueError(f"{path}: not a list of modules (objects with a \"type\")")
    return path, sorted(modules, key=lambda m: m.get("idx", 0))


def read_modules(folder):
    """The `Modules` of the sentence-transformers folder `folder`. A ValueError naming the file
    and the module for what we cannot compute the same way: modules other than a BERT
    Transformer, then a Pooling with one of POOLING_KEYS' modes, then optionally Normalize; a
    prompt the model prepends to its texts."""
    path, modules = _module_list(folder)
    types = [m["type"] for m in modules]
    shape = types[:2] == [TRANSFORMER, POOLING] and types[2:] in ([], [NORMALIZE])
    if not shape:
        extra = next((f"{m['type']} (path {m.get('path', '')!r})" for m in modules
                      if m["type"] not in (TRANSFORMER, POOLING, NORMALIZE)), None)
        what = f"its module {extra} is not one" if extra else f"its modules {types} are not in the order"
        raise ValueError(f"{path}: {what} bert_tf computes: a BERT Transformer, a Pooling module, optionally "
                         "Normalize")
    transformer = os.path.join(folder, modules[0].get("path", ""))
    if not os.path.isdir(transformer):
        raise ValueError(f"{path}: the Transformer module's folder {transformer} does not exist")
    model_type = read_json_object(os.path.join(transformer, "config.json")).get("model_type") \
        if os.path.isfile(os.path.join(transformer, "config.json")) else "bert"
    if model_type != "bert":
        raise ValueError(f"{path}: its Transformer module is a {model_type!r} model, not BERT")
    _check_no_prompt(folder)
    settings_path = os.path.join(transformer, TRANSFORMER_CONFIG)
    settings = read_json_object(settings_path) if os.path.isfile(settings_path) else {}
    length = settings.get("max_seq_length")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 1):
        raise ValueError(f"{settings_path}: {shown.max_seq_length}={length!r} is not a positive integer")
    return Modules(
        transformer=transformer, pooling=_pooling(os.path.join(folder, modules[1].get("path", POOLING_FOLDER))),
        normalize=len(modules) == 3, max_seq_length=length, do_lower_case=bool(settings.get("do_lower_case", False)),
    )


def _pooling(module_folder):
    path = os.path.join(module_folder, "config.json")
    values = read_json_object(path)
    modes = [name for name, key in POOLING_KEYS.items() if values.get(key)]
    others = [key for key in _OTHER_POOLING_KEYS if values.get(key)]
    if others or len(modes) != 1:
        given = ", ".join(others + [POOLING_KEYS[m] for m in modes]) or "none"
        raise ValueError(f"{path}: pooling modes {given}: bert_tf computes exactly one of "
                         f"{', '.join(POOLING_KEYS.values())}")
    if values.get("include_prompt", True) is not True:
        raise ValueError(f"{path}: include_prompt={values['include_prompt']!r} (pooling without a prompt's tokens) is "
                         "not supported")
    return modes[0]


def _check_no_prompt(folder):
    path = os.path.join(folder, MODEL_CONFIG)
    if not os.path.isfile(path):
        return
    values = read_json_object(path)
    prompts = {name: text for name, text in (values.get("prompts") or {}).items() if text}
    if prompts or values.get("default_prompt_name"):
        raise ValueError(f"{path}: the model prepends a prompt ({', '.join(prompts) or values['default_prompt_name']}"
                         "); bert_tf embeds texts as given")
    if values.get("similarity_fn_name") not in (None, "cosine"):
        raise ValueError(f"{path}: similarity_fn_name={values['similarity_fn_name']!r}: bert_tf's embeddings are "
                         "compared by cosine")


def check_length_fits(modules):
    """A ValueError naming sentence_bert_config.json when its max_seq_length is more than the BERT
    module's position embeddings (its config.json's max_position_embeddings): the folder's own
    length would be taken, and it cannot be computed."""
    config_path = os.path.join(modules.transformer, "config.json")
    if modules.max_seq_length is None or not os.path.isfile(config_path):
        return
    positions = read_json_object(config_path).get("max_position_embeddings")
    if isinstance(positions, int) and modules.max_seq_length > positions:
        raise ValueError(
            f"{os.path.join(modules.transformer, TRANSFORMER_CONFIG)}: "
            f"{shown.max_seq_length}={modules.max_seq_length} is more "
            f"than the model's max_position_embeddings={positions} ({config_path})"
        )


def bert_module_folder(path):
    """The folder of the BERT module of the sentence-transformers folder `path` (the folder itself,
    or a subfolder such as `0_Transformer/` where older sentence-transformers saved it), its
    modules checked as `read_modules` does; `path` unchanged when it is not such a folder."""
    return read_modules(path).transformer if is_sentence_transformers_folder(path) else path


def modules_of(folder):
    """(sentence-transformers folder, Modules) whose BERT module is `folder`: the folder itself, or
    its parent when the parent's modules.json lists `folder` as a module's path; else None."""
    folder = os.path.normpath(folder)
    parent = os.path.dirname(folder)
    if is_sentence_transformers_folder(folder):
        modules = read_modules(folder)
        if os.path.samefile(modules.transformer, folder):
            return folder, modules
    if parent and is_sentence_transformers_folder(parent):
        try:
            _, listed = _module_list(parent)
        except ValueError:
            return None  # not the modules of this folder's model: another tool's file
        if any(m.get("path") == os.path.basename(folder) for m in listed):
            modules = read_modules(parent)
            if os.path.samefile(modules.transformer, folder):
                return parent, modules
    return None


def check_agrees(modules, pooling=None, normalize=None, source="init_checkpoint"):
    """A ValueError naming both when a setting given anyway (None: not given) differs from what the
    folder's modules say (`source` names the folder's setting). Only the modules' computation is
    compared: their max_seq_length is where texts are cut, not part of the model, and any length
    up to the model's positions may be given instead (as `model.max_seq_length = 128` does in
    sentence-transformers)."""
    for name, given, found in (("pooling", pooling, modules.pooling), ("normalize", normalize, modules.normalize)):
        if given is not None and found is not None and given != found:
            raise ValueError(f"{shown(name)}={given} but the sentence-transformers folder {source} has "
                             f"{shown(name)}={found}")


def module_files(pooling, normalize, max_seq_length, hidden_size, do_lower_case=False):
    """{relative path: JSON value} of the files that describe an embedding model's modules beside
    its BERT folder's own: modules.json, sentence_bert_config.json, the Pooling module's config and
    config_sentence_transformers.json (cosine similarity, no prompt). A Normalize module has no
    file (`embedder_files` adds its folder)."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": TRANSFORMER},
        {"idx": 1, "name": "1", "path": POOLING_FOLDER, "type": POOLING},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": NORMALIZE_FOLDER, "type": NORMALIZE})
    modes = {key: name == pooling for name, key in POOLING_KEYS.items()}
    pooling_config = {"word_embedding_dimension": hidden_size, **modes, **dict.fromkeys(_OTHER_POOLING_KEYS, False),
                      "include_prompt": True}
    return {
        MODULES_FILE: modules,
        TRANSFORMER_CONFIG: {"max_seq_length": max_seq_length, "do_lower_case": do_lower_case},
        os.path.join(POOLING_FOLDER, "config.json"): pooling_config,
        MODEL_CONFIG: {"prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine"},
    }


def embedder_files(model, record=None, bert_config=None):
    """{relative path: JSON value, or None for a folder without a file} that make a Hugging Face
    folder of `model` a sentence-transformers folder when it is a BertSentenceEmbedder (its
    `module_files`, the max length `record`'s or else the config's longest, and the Normalize
    module's folder); {} for any other model."""
    if not isinstance(model, BertSentenceEmbedder):
        return {}
    config = bert_config or model.encoder.bert_config()
    length = record.max_seq_length if record is not None else config.max_position_embeddings
    files = module_files(model.pooling, model.normalize, length, config.hidden_size)
    return {**files, NORMALIZE_FOLDER: None} if model.normalize else files
