"""Google's original checkpoint layout (`bert_model.ckpt` + `bert_config.json`), both ways.

`original_variable_map` is the one place that knows how the original's TF1 variable names
(`bert/encoder/layer_3/attention/self/query/kernel`, `cls/predictions/output_bias`, ...) map onto
this package's Keras variables.
"""

import dataclasses
import os
import re
import shutil
import tempfile
import warnings

import keras
import numpy as np
import tensorflow as tf

from bert_tf.io_utils import owner_is_gone, owner_tag
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.runs import registry

# Optimizer state and bookkeeping the original writes next to the weights; never model weights.
_IGNORED_SUFFIXES = ("/adam_m", "/adam_v")
_IGNORED_NAMES = ("global_step",)


@dataclasses.dataclass(frozen=True)
class _Entry:
    variable: object  # a keras.Variable
    transpose: bool = False  # the original stores the matrix transposed
    # A task head: loaded when the checkpoint has it (a fine-tuned model), else left as
    # initialised (fine-tuning from a pre-trained checkpoint).
    optional: bool = False


@dataclasses.dataclass
class LoadReport:
    """What `load_original_checkpoint` did: names it loaded, names it left unused, and the
    model's optional (head) variables the checkpoint did not have.

    `restore` returns one for its other sources too (a Hugging Face folder's, in transformers'
    names).

    Args:
        loaded: The checkpoint's variable names assigned to the model, sorted.
        unused: The checkpoint's other variable names (neither loaded nor ignored), sorted.
        ignored: The optimizer slots (`*/adam_m`, `*/adam_v`) and `global_step` of the
            checkpoint, skipped, sorted.
        not_found: The model's optional (head) variables the checkpoint did not have, left as
            initialised, sorted.
    """

    loaded: list
    unused: list
    ignored: list
    not_found: list = dataclasses.field(default_factory=list)


def _is_ignored(name):
    return name in _IGNORED_NAMES or name.endswith(_IGNORED_SUFFIXES)


def _encoder_map(encoder: BertEncoder) -> dict:
    emb = encoder.embeddings
    out = {
        "bert/embeddings/word_embeddings": _Entry(emb.word_embeddings.embeddings),
        "bert/embeddings/token_type_embeddings": _Entry(emb.token_type_embeddings.embeddings),
        "bert/embeddings/position_embeddings": _Entry(emb.position_embeddings),
        "bert/embeddings/LayerNorm/gamma": _Entry(emb.layer_norm.gamma),
        "bert/embeddings/LayerNorm/beta": _Entry(emb.layer_norm.beta),
        "bert/pooler/dense/kernel": _Entry(encoder.pooler_dense.kernel),
        "bert/pooler/dense/bias": _Entry(encoder.pooler_dense.bias),
    }
    for i, block in enumerate(encoder.transformer_layers):
        prefix = f"bert/encoder/layer_{i}/"
        dense_layers = {
            "attention/self/query": block.attention.query,
            "attention/self/key": block.attention.key,
            "attention/self/value": block.attention.value,
            "attention/output/dense": block.attention.output_dense,
            "intermediate/dense": block.intermediate_dense,
            "output/dense": block.output_dense,
        }
        for name, dense in dense_layers.items():
            out[prefix + name + "/kernel"] = _Entry(dense.kernel)
            out[prefix + name + "/bias"] = _Entry(dense.bias)
        for name, norm in (
            ("attention/output/LayerNorm", block.attention_layer_norm),
            ("output/LayerNorm", block.output_layer_norm),
        ):
            out[prefix + name + "/gamma"] = _Entry(norm.gamma)
            out[prefix + name + "/beta"] = _Entry(norm.beta)
    return out


def original_variable_map(model) -> dict:
    """Maps the original's variable names onto the Keras variables of `model`.

    Args:
        model: A BertEncoder, BertPretrainer or a task kind's model (`bert_tf.runs.registry`).

    Returns:
        A dict of original variable name -> entry, each with `variable` (the Keras variable),
        `transpose` (whether the original stores the matrix transposed) and `optional` (a task
        head's variable, loaded only when a checkpoint has it).

    Raises:
        TypeError: `model` is none of these.
    """
    if isinstance(model, BertPretrainer):
        out = _encoder_map(model.encoder)
        mlm, nsp = model.masked_lm, model.next_sentence
        out.update(
            {
                "cls/predictions/transform/dense/kernel": _Entry(mlm.transform_dense.kernel),
                "cls/predictions/transform/dense/bias": _Entry(mlm.transform_dense.bias),
                "cls/predictions/transform/LayerNorm/gamma": _Entry(mlm.transform_layer_norm.gamma),
                "cls/predictions/transform/LayerNorm/beta": _Entry(mlm.transform_layer_norm.beta),
                "cls/predictions/output_bias": _Entry(mlm.output_bias),
            }
        )
        if nsp is not None:  # None: pre-training without next-sentence prediction
            # Stored as [2, hidden] by the original; our Dense kernel is [hidden, 2].
            out["cls/seq_relationship/output_weights"] = _Entry(nsp.dense.kernel, transpose=True)
            out["cls/seq_relationship/output_bias"] = _Entry(nsp.dense.bias)
        return out
    kind = registry.of_model(model)
    if kind is not None:
        # The original's fine-tuned heads, kernel stored [outputs, hidden]: run_classifier's
        # top-level output_weights [num_labels, hidden] (also the token classifier's, per tag, and
        # the multiple-choice model's one score), run_squad's cls/squad/output_weights [2, hidden].
        out = _encoder_map(model.encoder)
        if kind.head_names:  # a model without a head of its own (the sentence embedder) is its encoder's
            head = getattr(model, kind.head_layer).dense
            kernel, bias = kind.head_names
            out[kernel] = _Entry(head.kernel, transpose=True, optional=True)
            out[bias] = _Entry(head.bias, optional=True)
        return out
    if isinstance(model, BertEncoder):
        return _encoder_map(model)
    raise TypeError(
        f"expected a BertEncoder, BertPretrainer or a fine-tuning task's model, got {type(model).__name__}"
    )


# What reading a truncated or corrupted checkpoint raises (TensorFlow's reader gives IndexError
# for a short .data file).
READ_ERRORS = (tf.errors.OpError, IndexError, ValueError, RuntimeError)


def _open_reader(checkpoint_path):
    path = str(checkpoint_path)
    suffix = re.search(r"\.(index|data-\d+-of-\d+)$", path)
    if suffix and os.path.exists(path[: suffix.start()] + ".index"):
        raise FileNotFoundError(
            f"{path!r} is one file of a checkpoint: pass its prefix, {path[: suffix.start()]!r}"
        )
    try:
        return tf.train.load_checkpoint(path)
    except READ_ERRORS as e:
        raise FileNotFoundError(
            f"cannot read a TensorFlow checkpoint at {path!r}: expected a prefix such "
            f"as '.../bert_model.ckpt' with '.index' and '.data-*' files beside it ({e})"
        ) from None


def damaged(checkpoint_path, error):
    """The ValueError for a checkpoint whose files cannot be read whole."""
    return ValueError(
        f"checkpoint {str(checkpoint_path)!r} is damaged (truncated or corrupted: "
        f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
    )


def check_finite(values, source):
    """A ValueError naming `source` (the file read) and the first weight of `values` (name ->
    array) that holds NaN or infinity: a model with one computes NaN, and what a script writes
    from it (features as JSON) is no longer valid. Loads check before assigning anything."""
    for name, value in values.items():
        value = np.asarray(value)
        if value.dtype.kind in "biu":  # integers (a step counter) are always finite
            continue
        if not np.isfinite(value).all():  # bfloat16 too, which numpy does not count as floating
            bad = value.size - np.count_nonzero(np.isfinite(value))
            raise ValueError(
                f"{source}: weight {name} holds NaN or infinity ({bad} of {value.size} values): the file is damaged "
                "or the training that wrote it diverged"
            )


def list_original_variables(checkpoint_path) -> dict:
    """Lists the variables of a checkpoint.

    Args:
        checkpoint_path: A checkpoint prefix, such as `.../bert_model.ckpt`.

    Returns:
        A dict of variable name -> shape (a list of ints), for every variable in the checkpoint.

    Raises:
        FileNotFoundError: No checkpoint can be read at `checkpoint_path`, or it names one file of
            a checkpoint (its `.index` or a `.data-*` file) rather than its prefix.
    """
    return dict(_open_reader(checkpoint_path).get_variable_to_shape_map())


def _model_shape(entry):
    shape = tuple(entry.variable.shape)
    return shape[::-1] if entry.transpose else shape


def load_original_checkpoint(model, checkpoint_path) -> LoadReport:
    """Loads an original-layout checkpoint into a BertEncoder, BertPretrainer or a task model.

    Every variable the model needs must be present with the original's shape. A task head (the
    classifier's `output_weights`/`output_bias`) is loaded when present, with the same shape
    check, and otherwise keeps its initialisation (`LoadReport.not_found`). Every value is read
    and checked before any is assigned. Optimizer slots (`*/adam_m`, `*/adam_v`) and
    `global_step` are skipped; any other variable the model does not use is reported in a
    warning and in the returned `LoadReport.unused`.

    Args:
        model: A BertEncoder, BertPretrainer or a task kind's model.
        checkpoint_path: The checkpoint's prefix, such as `.../bert_model.ckpt`.

    Returns:
        A `LoadReport`.

    Raises:
        FileNotFoundError: No checkpoint can be read at `checkpoint_path` (or it names one of its
            files rather than its prefix).
        ValueError: A variable the model needs is missing or has another shape (nothing is
            assigned; each offending variable is named with both shapes); the checkpoint's files
            cannot be read whole (damaged); or a weight holds NaN or infinity (named, by
            `check_finite`; nothing assigned).
        TypeError: `model` is none of the models above.
    """
    reader = _open_reader(checkpoint_path)
    available = reader.get_variable_to_shape_map()
    mapping = original_variable_map(model)

    not_found = sorted(n for n, e in mapping.items() if e.optional and n not in available)
    mapping = {n: e for n, e in mapping.items() if n not in not_found}
    problems = []
    for name, entry in mapping.items():
        if name not in available:
            problems.append(f"  {name}: missing from the checkpoint (model expects {_model_shape(entry)})")
        elif tuple(available[name]) != _model_shape(entry):
            problems.append(
                f"  {name}: checkpoint has shape {tuple(available[name])}, "
                f"model expects {_model_shape(entry)}"
            )
    if problems:
        raise ValueError(
            f"checkpoint {checkpoint_path!r} does not match the model "
            f"({len(problems)} problem(s)):\n" + "\n".join(problems)
        )

    values = {}
    for name in mapping:  # every value read before any is assigned: a damaged file changes nothing
        try:
            values[name] = reader.get_tensor(name)
        except READ_ERRORS as e:
            raise damaged(checkpoint_path, e) from None
    check_finite(values, checkpoint_path)
    for name, entry in mapping.items():
        entry.variable.assign(values[name].T if entry.transpose else values[name])

    ignored = sorted(n for n in available if n not in mapping and _is_ignored(n))
    unused = sorted(n for n in available if n not in mapping and not _is_ignored(n))
    if unused:
        shown = ", ".join(unused[:20]) + (f", ... ({len(unused) - 20} more)" if len(unused) > 20 else "")
        warnings.warn(
            f"{len(unused)} variable(s) of checkpoint {checkpoint_path!r} are not used by "
            f"{type(model).__name__}: {shown}",
            stacklevel=2,
        )
    return LoadReport(loaded=sorted(mapping), unused=unused, ignored=ignored, not_found=not_found)


def original_weights(model) -> dict:
    """The weights of `model` in the original layout (names, shapes, orientation).

    Args:
        model: A BertEncoder, BertPretrainer or a task kind's model.

    Returns:
        A dict of original variable name -> float32 numpy array.

    Raises:
        TypeError: `model` is none of these.
    """
    out = {}
    for name, entry in original_variable_map(model).items():
        value = keras.ops.convert_to_numpy(entry.variable).astype(np.float32)
        out[name] = value.T if entry.transpose else value
    return out


def save_original_checkpoint(model, checkpoint_prefix, global_step=None, bert_config=None):
    """Writes the model's weights as an original-layout checkpoint at `checkpoint_prefix`.

    The files (`<prefix>.index`, `<prefix>.data-00000-of-00001`, a `checkpoint` state file and
    `bert_config.json` beside them) are written under temporary names in the same folder and
    renamed into place, so a reader never sees a partial checkpoint. The weights are stored as
    float32.

    Args:
        model: A BertEncoder, BertPretrainer or a task kind's model.
        checkpoint_prefix: The checkpoint's prefix, such as `.../bert_model.ckpt`; its folder is
            made when missing.
        global_step: The step to store as `global_step` (int64), or None to store none.
        bert_config: The BertConfig to write as bert_config.json (e.g. the one the model was
            loaded from, with its extra keys); None: the model's own hyper-parameters.

    Returns:
        The prefix, as an absolute path.

    Raises:
        TypeError: `model` is none of the models above.
    """
    checkpoint_prefix = os.path.abspath(checkpoint_prefix)
    directory = os.path.dirname(checkpoint_prefix)
    base = os.path.basename(checkpoint_prefix)
    os.makedirs(directory, exist_ok=True)
    weights = original_weights(model)
    if global_step is not None:
        weights["global_step"] = np.asarray(global_step, dtype=np.int64)
    names = sorted(weights)

    for name in os.listdir(directory):  # folders of runs killed while writing
        owner = re.fullmatch(r"\.tmp_ckpt_([0-9a-f]{8}-\d+)_.*", name)
        if owner and owner_is_gone(owner.group(1)):
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
    tmp_dir = tempfile.mkdtemp(prefix=f".tmp_ckpt_{owner_tag()}_", dir=directory)
    try:
        tmp_prefix = os.path.join(tmp_dir, base)
        with tf.device("CPU:0"):
            tf.raw_ops.SaveV2(
                prefix=tmp_prefix,
                tensor_names=names,
                shape_and_slices=[""] * len(names),
                tensors=[tf.constant(weights[n]) for n in names],
            )
        written = sorted(os.listdir(tmp_dir), key=lambda f: f.endswith(".index"))
        for fname in written:  # data shards first, the index last: it is what readers open
            os.replace(os.path.join(tmp_dir, fname), os.path.join(directory, fname))
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    tf.compat.v1.train.update_checkpoint_state(directory, base)
    if bert_config is None:
        encoder = getattr(model, "encoder", model)
        bert_config = encoder.bert_config()
    bert_config.to_json_file(os.path.join(directory, "bert_config.json"))
    return checkpoint_prefix
