"""The weights of a Hugging Face BERT folder (`model.safetensors`, or transformers' TensorFlow
`tf_model.h5`), read and written without PyTorch, and their names mapped onto the original
layout's: `bert_tf.checkpoints.original.original_variable_map` says which Keras variable each
original name is, so loading and writing reuse it.

Names here are PyTorch's as transformers saves them, without the `bert.` prefix of the encoder's
weights (`encoder.layer.0.attention.self.query.weight`); a TensorFlow file's names
(`tf_bert_model/bert/encoder/layer_._0/attention/self/query/kernel:0`) are read into them. A
PyTorch `Linear` weight is `[out, in]`, the original's kernel `[in, out]`; embeddings, the NSP
head and the task heads (stored `[outputs, hidden]` by both) are not transposed.
"""

import dataclasses
import os
import re
import warnings

import numpy as np

from bert_tf.checkpoints.original import LoadReport, check_finite, original_variable_map, original_weights
from bert_tf.io_utils import umask
from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.runs import registry

SAFETENSORS = "model.safetensors"
TF_H5 = "tf_model.h5"
PYTORCH_BIN = "pytorch_model.bin"
# transformers' classes of the models that are no fine-tuning kind's (config.json `architectures`).
ENCODER, PRETRAINER = "BertModel", "BertForPreTraining"
# Another class of BERT with the same weights (a pre-training folder often says this one).
MASKED_LM = "BertForMaskedLM"

# Saved by some versions but no weight of their own: a buffer, and the output layer tied to the
# word embeddings and to cls.predictions.bias.
_IGNORED = ("embeddings.position_ids", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
# The heads a folder may hold that the model it initialises has not (fine-tuning from a pre-trained
# folder): reported unused, as the original layout's are. Any other weight the model lacks is an error.
_HEADS = ("cls.", "classifier.", "qa_outputs.")
_POOLER = ("pooler.dense.weight", "pooler.dense.bias")
_PRETRAINING_HEAD = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
}
_LEAVES = {"kernel": "weight", "gamma": "weight", "beta": "bias", "bias": "bias"}


def hf_name(original, kind=None):
    """(name, transposed?) of the original layout's variable `original` in transformers' PyTorch
    layout, without the `bert.` prefix; `kind` (a `registry.TaskKind`) maps its head's names."""
    if kind is not None and original in kind.head_names:
        return f"{kind.hf_head}.{('weight', 'bias')[kind.head_names.index(original)]}", False
    if original in _PRETRAINING_HEAD:
        return _PRETRAINING_HEAD[original], False
    parts = original.split("/")
    parts = [re.sub(r"^layer_(\d+)$", r"layer.\1", part) for part in parts[parts[0] == "bert" :]]
    if parts[-1].endswith("_embeddings"):  # the tables: word, position, token type
        return ".".join(parts) + ".weight", False
    return ".".join(parts[:-1] + [_LEAVES[parts[-1]]]), parts[-1] == "kernel"


def _is_encoder_weight(name):
    return not name.startswith(_HEADS)


def architecture_of(model):
    """transformers' class of `model` (a BertEncoder, BertPretrainer or a task kind's model)."""
    kind = registry.of_model(model)
    if kind is not None:
        return kind.hf_architecture or ENCODER  # a kind without a head of its own (the sentence embedder): its encoder
    if isinstance(model, BertPretrainer):
        return PRETRAINER
    if isinstance(model, BertEncoder):
        return ENCODER
    raise TypeError(f"expected a BertEncoder, BertPretrainer or a fine-tuning task's model, got {type(model).__name__}")


def model_tensors(model):
    """Name -> float32 array of every weight of `model` as transformers saves its class
    (`architecture_of`): the PyTorch layout, `bert.` before the encoder's names but for a bare
    BertModel, no pooler in the classes that have none."""
    kind = registry.of_model(model)
    prefix = "" if architecture_of(model) == ENCODER else "bert."
    out = {}
    for original, value in original_weights(model).items():
        name, transposed = hf_name(original, kind)
        if kind is not None and not kind.hf_pooler and name in _POOLER:
            continue
        value = value.T if transposed else value
        out[(prefix if _is_encoder_weight(name) else "") + name] = np.ascontiguousarray(value)
    return out


def write_safetensors(tensors, path):
    """`tensors` as a safetensors file with the metadata transformers asks of a PyTorch one, with
    the user's umask. A failed write (a full disk) is an OSError, as any other file's."""
    from safetensors import SafetensorError
    from safetensors.numpy import save_file

    try:
        save_file(tensors, path, metadata={"format": "pt"})
    except SafetensorError as e:  # its message ends with the system's error: "... (os error 28)"
        code = re.search(r"\(os error (\d+)\)", str(e))
        if code is None:
            raise
        raise OSError(int(code.group(1)), os.strerror(int(code.group(1)))) from e
    os.chmod(path, 0o666 & ~umask())  # safetensors creates 0600 files; give the mode the folder's other files have


# ---------------------------------------------------------------------------------------------
# Reading


@dataclasses.dataclass(frozen=True)
class _Stored:
    name: str  # as in the file
    shape: tuple  # in the PyTorch layout
    read: callable  # -> the float32 array in the PyTorch layout


def _canonical(name):
    """A PyTorch name without the `bert.` prefix, old LayerNorm names (`gamma`, `beta`) as today's."""
    name = name.removeprefix("bert.")
    return re.sub(r"\.LayerNorm\.(gamma|beta)$", lambda m: ".LayerNorm." + _LEAVES[m.group(1)], name)


def _from_tensorflow(name):
    """(PyTorch name, transposed?) of a weight of transformers' TensorFlow models: the model's
    scope dropped (as transformers' own loader does), `layer_._0` -> `layer.0`, the heads'
    `mlm___cls`/`nsp___cls` -> `cls`, a Dense `kernel` [in, out] -> `weight`, transposed."""
    parts = name.removesuffix(":0").split("/")[1:]
    parts = [re.sub(r"^layer_\._(\d+)$", r"layer.\1", p) for p in parts]
    parts = ["cls" if p in ("mlm___cls", "nsp___cls") else p for p in parts]
    leaf = {"kernel": "weight", "gamma": "weight", "beta": "bias", "embeddings": "weight"}.get(parts[-1], parts[-1])
    return ".".join(parts[:-1] + [leaf]), parts[-1] == "kernel"


def _safetensors_weights(path):
    """(PyTorch name, `_Stored`) of each tensor of a safetensors file."""
    from safetensors import safe_open

    def read(name):
        with safe_open(path, framework="np") as f:
            return np.asarray(f.get_tensor(name), dtype=np.float32)

    with safe_open(path, framework="np") as f:
        return [(n, _Stored(n, tuple(f.get_slice(n).get_shape()), lambda n=n: read(n))) for n in f.keys()]


def _h5_weights(path):
    """(PyTorch name, `_Stored`) of each weight of transformers' `save_weights` layout: a group
    per top-level layer (`layer_names`), each listing its weights' full names (`weight_names`),
    the datasets at those paths in the group."""
    import h5py

    def read(layer, weight, transposed):
        with h5py.File(path, "r") as f:
            value = np.asarray(f[layer][weight][()], dtype=np.float32)
        return value.T if transposed else value

    out = []
    with h5py.File(path, "r") as f:
        for layer in f.attrs.get("layer_names", list(f.keys())):
            layer = layer.decode() if isinstance(layer, bytes) else layer
            for weight in f[layer].attrs.get("weight_names", []):
                weight = weight.decode() if isinstance(weight, bytes) else weight
                name, transposed = _from_tensorflow(weight)
                shape = tuple(f[layer][weight].shape)
                shape = shape[::-1] if transposed else shape
                out.append((name, _Stored(weight, shape, lambda a=(layer, weight, transposed): read(*a))))
    return out


def weights_file(folder):
    """The weights file of a Hugging Face folder (safetensors first, as transformers prefers);
    a FileNotFoundError (or ValueError for PyTorch's own format) saying what is there instead."""
    for name in (SAFETENSORS, TF_H5):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    if os.path.isfile(os.path.join(folder, PYTORCH_BIN)):
        raise ValueError(
            f"{folder} holds {PYTORCH_BIN} only, which needs PyTorch to read: save the model as safetensors "
            f"(transformers' model.save_pretrained(folder) writes {SAFETENSORS}) and pass that folder"
        )
    raise FileNotFoundError(f"{folder}: no {SAFETENSORS} or {TF_H5} (a Hugging Face folder's weights)")


def _damaged(path, error):
    return ValueError(f"{path} is damaged or not a {os.path.basename(path)} ({type(error).__name__}: {error})")


def read_weights(folder):
    """(the weights file, canonical name (`_canonical`) -> `_Stored`) of the folder, nothing read
    yet. A name found twice (with and without `bert.`) is an error; transformers' TensorFlow
    files list tied weights (the word embeddings) in each layer that uses them: the first is kept."""
    path = weights_file(folder)
    try:
        found = _safetensors_weights(path) if path.endswith(".safetensors") else _h5_weights(path)
    except Exception as e:  # noqa: BLE001 - each library has its own error for a damaged file
        raise _damaged(path, e) from None
    out = {}
    for name, weight in found:
        name = _canonical(name)
        if name in out and path.endswith(".safetensors"):
            raise ValueError(f"{path} holds {name} twice: {out[name].name} and {weight.name}")
        out.setdefault(name, weight)
    return path, out


def _expected(model, architecture):
    """What `model` takes from a folder of transformers' class `architecture`: (canonical name ->
    (original name, transposed?, optional?, reported when absent?), the names of its weights
    that such a folder cannot give). A task model takes the head only from a folder of its own
    class (another class's `classifier` is another head); its pooler is optional (a folder of a
    class without one leaves it as initialised) and, for a kind whose transformers class has
    none, not even reported."""
    kind = registry.of_model(model)
    out, not_given = {}, []
    for original, entry in original_variable_map(model).items():
        name, transposed = hf_name(original, kind)
        if kind is not None and original in kind.head_names and architecture != kind.hf_architecture:
            not_given.append(name)
            continue
        pooler = kind is not None and name in _POOLER
        out[name] = (original, transposed, entry.optional or pooler, not (pooler and not kind.hf_pooler))
    return out, not_given


def _model_shape(entry, transposed):
    shape = tuple(entry.variable.shape)
    shape = shape[::-1] if entry.transpose else shape  # the original layout's
    return shape[::-1] if transposed else shape


def load_weights(model, folder, architecture):
    """Loads the weights of the Hugging Face folder `folder` (of transformers' class
    `architecture`) into `model`; returns the `LoadReport`, in transformers' names.

    Every weight `model` needs must be there with its shape and finite values, and every encoder
    weight there must be one `model` has: otherwise nothing is assigned and a one-line ValueError
    names the offending weights. Heads `model` lacks (pre-training heads when fine-tuning) are
    reported unused, in a warning too; a task model's head absent from the folder is left as
    initialised (`not_found`).
    """
    path, stored = read_weights(folder)
    variables = original_variable_map(model)
    expected, not_found = _expected(model, architecture)
    prefix = "" if architecture == ENCODER else "bert."
    problems, plan = [], {}
    for name, (original, transposed, optional, reported) in expected.items():
        entry, shape = variables[original], _model_shape(variables[original], transposed)
        if name not in stored:
            if not optional:
                shown = (prefix if _is_encoder_weight(name) else "") + name
                problems.append(f"{shown} is missing (model expects {shape})")
            elif reported:
                not_found.append(name)
        elif stored[name].shape != shape:
            problems.append(f"{stored[name].name} has shape {stored[name].shape}, model expects {shape}")
        else:
            plan[name] = (entry, transposed)
    ignored = sorted(n for n in stored if n in _IGNORED)
    extra = sorted(n for n in stored if n not in expected and n not in _IGNORED)
    problems += [f"{stored[n].name} is not a weight of {type(model).__name__}" for n in extra if _is_encoder_weight(n)]
    if problems:  # one line, the first few named
        more = f"; ... ({len(problems) - 5} more)" if len(problems) > 5 else ""
        raise ValueError(f"{path} does not match the model (is config.json its own?): {'; '.join(problems[:5])}{more}")
    try:
        values = {name: stored[name].read() for name in plan}  # every value read before any is assigned
    except Exception as e:  # noqa: BLE001 - as in read_weights
        raise _damaged(path, e) from None
    check_finite({stored[name].name: value for name, value in values.items()}, path)
    for name, (entry, transposed) in plan.items():
        value = values[name].T if transposed else values[name]  # the original layout's
        entry.variable.assign(value.T if entry.transpose else value)
    unused = [stored[n].name for n in extra]
    if unused:
        warnings.warn(
            f"{len(unused)} weight(s) of {path} are not used by {type(model).__name__}: {', '.join(unused)}",
            stacklevel=2,
        )
    return LoadReport(loaded=sorted(plan), unused=unused, ignored=ignored, not_found=sorted(not_found))
