"""Conversion between Google's original checkpoint layout, Hugging Face folders and this
package's models (TensorFlow): what convert_checkpoint.py does, without its flags.

- Original (or Hugging Face) -> Keras: `original_model` builds the model an original checkpoint or
  a Hugging Face folder holds (unloaded), `to_keras` loads its weights and writes the .keras file.
- Keras -> original: `read_model` reads a .keras file, one of our training checkpoints (rebuilt
  from the files its run left beside it) or a Hugging Face folder, `to_original` writes it in the
  original layout.
- -> Hugging Face: `read_model` as above, `hf_tokenizer` finds the vocabulary and casing, `to_hf`
  writes the folder.

`original_model`'s and `read_model`'s errors are ValueErrors (FileNotFoundErrors) whose message
starts with the setting at fault (`checkpoint_to_convert=...`); `to_keras`'s name the checkpoint
read; a failed write (a full disk) is a `WriteFailed` whose `__cause__` says why. The writers
leave no partial file under the final names.
"""

import contextlib
import dataclasses
import os
import re

import tensorflow as tf

from bert_tf.checkpoints import hf, sources
from bert_tf.checkpoints.original import list_original_variables, load_original_checkpoint, save_original_checkpoint
from bert_tf.checkpoints.restore import is_training_checkpoint, load_keras_model, save_keras_model
from bert_tf.errors import shown
from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.runs import record as run_record
from bert_tf.runs import registry
from bert_tf.runs.record import RunRecord

# The models an original checkpoint converts to besides the fine-tuned ones of the task kinds the
# original release fine-tunes (`original_kinds`).
RELEASE_MODELS = ("encoder", "pretrainer")


def original_kinds():
    """The task kinds the original release fine-tunes (`TaskKind.from_original`), in the registry's
    order: their checkpoints hold the head variables the kind names."""
    return [kind for kind in registry.KINDS.values() if kind.from_original]


def model_choices():
    """What `original_model` may be asked for: "auto" (from the checkpoint's variables), the
    release's models, the original's fine-tuned kinds and their earlier names."""
    kinds = original_kinds()
    return ("auto", *RELEASE_MODELS, *(k.name for k in kinds), *(n for k in kinds for n in k.legacy_names if n))


def model_help():
    """The help of the `model` setting, its rule for "auto" read from the kinds."""
    kinds = original_kinds()
    found = "".join(f"{k.name} if it has {k.head_names[0]}, " for k in kinds)
    earlier = "; ".join(f"{n}: {k.name}'s earlier name" for k in kinds for n in k.legacy_names if n)
    return (f"to_keras: what to build. auto = pretrainer if the checkpoint has the cls/ heads, {found}else encoder"
            + (f" ({earlier})." if earlier else "."))


class WriteFailed(Exception):
    """Writing the converted checkpoint failed; `__cause__` is the OSError or TensorFlow error."""


@contextlib.contextmanager
def _writing():
    try:
        yield
    except (OSError, tf.errors.OpError) as e:
        raise WriteFailed(str(e)) from e


def original_model_kind(names):
    """What an original checkpoint holds, from its variable names: "pretrainer" (the cls/ heads),
    a task kind whose head variables it has (the classifier's output_weights first, then SQuAD's),
    else "encoder"."""
    if "cls/predictions/output_bias" in names:
        return "pretrainer"
    for kind in original_kinds():
        if kind.head_names[0] in names:
            return kind.name
    return "encoder"


def _model_name(model):
    """The `model_choices` name of `model`'s kind."""
    kind = registry.of_model(model)
    return kind.name if kind else "pretrainer" if isinstance(model, BertPretrainer) else "encoder"


def _folder_model(folder, config, model):
    """The unloaded model of a Hugging Face folder (`config`, when given, must match its own):
    the one its config.json names ("auto"), or its encoder."""
    with sources.prefixed("checkpoint_to_convert: "):
        found, _ = hf.folder_model(folder)
    if config is not None:
        hf.same_model(config, getattr(found, "encoder", found).bert_config(), "bert_config_file")
    if model in ("encoder", "auto", _model_name(found)):
        return getattr(found, "encoder", found) if model == "encoder" else found
    raise ValueError(f"model={model}: {folder} holds a {_model_name(found)} ({type(found).__name__})")


def original_model(checkpoint_to_convert, config, model="auto"):
    """An unloaded model on `config` for the original checkpoint `checkpoint_to_convert`: `model`
    one of `model_choices()` ("auto": `original_model_kind`). A task kind that keeps labels (the
    classifier) gets as many as the checkpoint's head has outputs, and needs that head. A Hugging
    Face folder's model is the one its config.json names (`config` may be None)."""
    sources.check_not_search(checkpoint_to_convert, "checkpoint_to_convert")
    if hf.is_hf_folder(checkpoint_to_convert):
        return _folder_model(checkpoint_to_convert, config, model)
    with sources.prefixed("checkpoint_to_convert: "):
        names = list_original_variables(checkpoint_to_convert)
    kind = original_model_kind(names) if model == "auto" else model
    encoder = BertEncoder.from_bert_config(config)
    if kind == "pretrainer":
        return BertPretrainer(encoder)
    if kind == "encoder":
        return encoder
    with sources.prefixed(f"model={model}: "):
        task_kind = registry.get(kind)
    record = RunRecord(kind=task_kind.name, task_name=task_kind.name)
    if "labels" in task_kind.record_fields:
        head = task_kind.head_names[0]  # the kernel, stored [outputs, hidden]
        if head not in names:
            raise ValueError(
                f"model={model}: {checkpoint_to_convert} has no {head} (not a fine-tuned {task_kind.name})"
            )
        record = dataclasses.replace(record, labels=tuple(str(i) for i in range(names[head][0])))
    return task_kind.build_model(record, encoder)


def to_keras(model, checkpoint_to_convert, converted_checkpoint_path):
    """Loads the original checkpoint (or Hugging Face folder) into `model` (see
    `load_original_checkpoint`, `hf.load`: a mismatch or a damaged file is a ValueError naming the
    file) and writes it as the .keras file `converted_checkpoint_path`. Returns the `LoadReport`."""
    load = hf.load if hf.is_hf_folder(checkpoint_to_convert) else load_original_checkpoint
    report = load(model, checkpoint_to_convert)
    with _writing():
        save_keras_model(model, converted_checkpoint_path)
    return report


def has_original_layout(model):
    """Whether `model` can be written in the original layout: the encoder, the pre-trainer, and
    every task kind's model (their heads have original names)."""
    return isinstance(model, (BertEncoder, BertPretrainer)) or registry.of_model(model) is not None


def original_layout_models():
    return ["BertEncoder", "BertPretrainer", *(kind.model_class.__name__ for kind in registry.KINDS.values())]


@dataclasses.dataclass(frozen=True)
class ModelToConvert:
    """What `read_model` read: the model, and what goes with it into the original layout."""

    model: object
    bert_config: object = None  # the BertConfig written beside it (None: the model's own)
    global_step: int | None = None  # a training checkpoint's own step
    warnings: tuple = ()  # about the configs read (a misspelt key), each starting with its setting
    record: RunRecord | None = None  # a fine-tuned model's run record (or the one a Hugging Face folder stands for)


def is_ours(path):
    """Whether `path` names one of our training checkpoints (a run's folder or its ckpt-N), not a
    .keras file, a Hugging Face folder or Google's name-based layout."""
    if path.endswith(".keras") or hf.is_hf_folder(path):
        return False
    return os.path.isdir(path) or is_training_checkpoint(path)


def is_original(path):
    """Whether `path` is the prefix of a checkpoint in Google's name-based layout (its `.index`
    beside it), not one of ours."""
    return not path.endswith(".keras") and os.path.isfile(f"{path}.index") and not is_ours(path)


def read_model(checkpoint_to_convert, bert_config_file=None):
    """The model of a .keras file, of one of our training checkpoints (`is_ours`) rebuilt on its
    run's bert_config.json (or `bert_config_file`), of a Hugging Face folder, or of a checkpoint in
    Google's layout (`is_original`: the model its variables say, on `bert_config_file` or the
    bert_config.json beside it, as Hugging Face's own converter takes them). A
    `bert_config_file` given is written beside the converted checkpoint (with its extra keys) and
    must match the model."""
    path = checkpoint_to_convert
    sources.check_not_search(path, "checkpoint_to_convert")
    config, warnings, step, record = None, (), None, None
    if hf.is_hf_folder(path):
        with sources.prefixed("checkpoint_to_convert: "):
            model, record = hf.folder_model(path)
            sources.restored(model, path)
    elif is_ours(path):
        # Our runs leave bert_config.json beside their checkpoints; an error names what gave it.
        setting = "bert_config_file" if bert_config_file else "checkpoint_to_convert"
        config_file = bert_config_file or os.path.join(run_record.run_directory(path), "bert_config.json")
        config, warnings = sources.read_config(config_file, setting)
        model, step, record = training_checkpoint_model(path, config)
    elif is_original(path):  # Google's layout: the config given, else the bert_config.json beside it
        config_file = sources.named_or_beside(bert_config_file, "bert_config_file", path, "bert_config.json")
        if config_file is None:
            raise ValueError(f"{shown.bert_config_file} is required: no bert_config.json beside "
                             f"{shown.checkpoint_to_convert}={path}")
        config, warnings = sources.read_config(config_file, "bert_config_file" if bert_config_file else
                                               "checkpoint_to_convert")
        model = original_model(path, config)
        with sources.prefixed("checkpoint_to_convert: "):
            load_original_checkpoint(model, path)
    else:
        with sources.prefixed("checkpoint_to_convert: "):
            model = load_keras_model(path)
    if not has_original_layout(model):
        raise ValueError(
            f"{shown.checkpoint_to_convert}={path} holds a {type(model).__name__}, which has no original layout; "
            f"expected one of {', '.join(original_layout_models())}"
        )
    if bert_config_file:
        if config is None:
            config, warnings = sources.read_config(bert_config_file, "bert_config_file")
        mine = getattr(model, "encoder", model).bert_config()
        if config.encoder_kwargs() != mine.encoder_kwargs():
            raise ValueError(
                f"{shown.bert_config_file}={bert_config_file} does not match the model: "
                f"{config.encoder_kwargs()} vs {mine.encoder_kwargs()}"
            )
    return ModelToConvert(model, config, step, warnings, record)


def _pretrainer(encoder, path):
    """The pre-trainer a pre-training checkpoint holds: with the next-sentence head, or without
    it when the run was masked-LM only (`next_sentence_prediction=False`)."""
    nsp = any(name.startswith("model/next_sentence/") for name, _ in tf.train.list_variables(path))
    return BertPretrainer(encoder, next_sentence_prediction=nsp)


def training_checkpoint_model(path, config):
    """The model of one of our training checkpoints (`path`: ckpt-N, or a run's folder for its
    latest), rebuilt from the run record beside it (a pre-trainer when there is none) on
    `config`, with its weights. Returns (model, global step from the checkpoint's name or None,
    run record or None); errors start with `checkpoint_to_convert=` and the path."""
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if not latest:
            raise ValueError(f"{shown.checkpoint_to_convert}={path} is a directory without a checkpoint")
        path = latest
    encoder = BertEncoder.from_bert_config(config)
    with sources.prefixed(f"checkpoint_to_convert={path}: "):
        found = run_record.read(os.path.dirname(path))
        model = found.task_kind.build_model(found, encoder) if found else _pretrainer(encoder, path)
        sources.restored(model, path)
    step = re.search(r"-(\d+)$", path)  # the loop names checkpoints after their global step
    return model, int(step.group(1)) if step else None, found


def to_original(source, converted_checkpoint_path, global_step=None):
    """Writes `source` (a `ModelToConvert`) as an original-layout checkpoint at the prefix
    `converted_checkpoint_path`, bert_config.json beside it; `global_step` defaults to the
    training checkpoint's own. Returns the prefix written."""
    step = global_step if global_step is not None else source.global_step
    with _writing():
        return save_original_checkpoint(
            source.model, converted_checkpoint_path, global_step=step, bert_config=source.bert_config
        )


def hf_tokenizer(source, checkpoint_to_convert, vocab_file=None, do_lower_case=None):
    """(vocab file, casing, run record) of the Hugging Face folder `source` (a `ModelToConvert`)
    becomes: `vocab_file`, else the vocab.txt beside the checkpoint; the casing of its run (or
    Hugging Face folder; a `do_lower_case` given must be it), else `do_lower_case` or True. The
    record of a .keras file is the one beside it, when of its model's kind."""
    record = source.record
    if record is None and checkpoint_to_convert.endswith(".keras"):
        beside = run_record.read(run_record.run_directory(checkpoint_to_convert))
        record = beside if beside and beside.task_kind is registry.of_model(source.model) else None
    vocab = sources.named_or_beside(vocab_file, "vocab_file", checkpoint_to_convert, "vocab.txt")
    if vocab is None:
        raise ValueError(
            f"{shown.vocab_file} is required by {shown.direction}=to_hf (no vocab.txt beside "
            f"{shown.checkpoint_to_convert}={checkpoint_to_convert})"
        )
    if record is None:
        return vocab, sources.casing(checkpoint_to_convert, do_lower_case), None
    if do_lower_case is not None and do_lower_case != record.do_lower_case:
        raise ValueError(
            f"{shown.do_lower_case}={do_lower_case}, but the model in "
            f"{run_record.run_directory(checkpoint_to_convert)} was "
            f"fine-tuned with {shown.do_lower_case}={record.do_lower_case}"
        )
    return vocab, record.do_lower_case, record


def to_hf(source, converted_checkpoint_path, vocab_file, do_lower_case, record=None):
    """Writes `source` (a `ModelToConvert`) as the Hugging Face folder `converted_checkpoint_path`
    (`hf.write_folder`; `record` names a fine-tuned model's labels). Returns transformers' class of
    the model written."""
    with _writing():
        return hf.write_folder(source.model, converted_checkpoint_path, vocab_file, do_lower_case, record,
                               source.bert_config)
