"""Conversion between Google's original checkpoint layout and this package's models (TensorFlow):
what convert_checkpoint.py does, without its flags.

- Original -> Keras: `original_model` builds the model an original checkpoint holds (unloaded),
  `to_keras` loads its weights and writes the .keras file.
- Keras -> original: `read_model` reads a .keras file or one of our training checkpoints (rebuilt
  from the files its run left beside it), `to_original` writes it in the original layout.

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

from bert_tf.checkpoints import sources
from bert_tf.checkpoints.original import list_original_variables, load_original_checkpoint, save_original_checkpoint
from bert_tf.checkpoints.restore import is_training_checkpoint, load_keras_model, save_keras_model
from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.tasks import record as run_record
from bert_tf.tasks import registry
from bert_tf.tasks.record import RunRecord

# The models an original checkpoint converts to: the release's own, and the fine-tuned models of
# the original's two fine-tuning scripts (their kinds' names).
ORIGINAL_MODELS = ("encoder", "pretrainer", "classifier", "squad")
# What `original_model` may be asked for: those, "auto" (from the checkpoint's variables) and
# squad's earlier name.
MODEL_CHOICES = ("auto", *ORIGINAL_MODELS, "span_labeler")


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
    for name in ORIGINAL_MODELS:
        if name in registry.KINDS and registry.get(name).head_names[0] in names:
            return name
    return "encoder"


def original_model(checkpoint_to_convert, config, model="auto"):
    """An unloaded model on `config` for the original checkpoint `checkpoint_to_convert`: `model`
    one of MODEL_CHOICES ("auto": `original_model_kind`). A task kind that keeps labels (the
    classifier) gets as many as the checkpoint's head has outputs, and needs that head."""
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
    """Loads the original checkpoint into `model` (see `load_original_checkpoint`: a mismatch or a
    damaged file is a ValueError naming the checkpoint) and writes it as the .keras file
    `converted_checkpoint_path`. Returns the `LoadReport`."""
    report = load_original_checkpoint(model, checkpoint_to_convert)
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


def is_ours(path):
    """Whether `path` names one of our training checkpoints (a run's folder or its ckpt-N), not a
    .keras file or Google's name-based layout."""
    return not path.endswith(".keras") and (os.path.isdir(path) or is_training_checkpoint(path))


def read_model(checkpoint_to_convert, bert_config_file=None):
    """The model of a .keras file, or of one of our training checkpoints (`is_ours`) rebuilt on
    its run's bert_config.json (or `bert_config_file`). A `bert_config_file` given is written
    beside the converted checkpoint (with its extra keys) and must match the model."""
    path = checkpoint_to_convert
    config, warnings, step = None, (), None
    if is_ours(path):
        # Our runs leave bert_config.json beside their checkpoints; an error names what gave it.
        setting = "bert_config_file" if bert_config_file else "checkpoint_to_convert"
        config_file = bert_config_file or os.path.join(run_record.run_directory(path), "bert_config.json")
        config, warnings = sources.read_config(config_file, setting)
        model, step = training_checkpoint_model(path, config)
    else:
        with sources.prefixed("checkpoint_to_convert: "):
            model = load_keras_model(path)
    if not has_original_layout(model):
        raise ValueError(
            f"checkpoint_to_convert={path} holds a {type(model).__name__}, which has no original layout; "
            f"expected one of {', '.join(original_layout_models())}"
        )
    if bert_config_file:
        if config is None:
            config, warnings = sources.read_config(bert_config_file, "bert_config_file")
        mine = getattr(model, "encoder", model).bert_config()
        if config.encoder_kwargs() != mine.encoder_kwargs():
            raise ValueError(
                f"bert_config_file={bert_config_file} does not match the model: "
                f"{config.encoder_kwargs()} vs {mine.encoder_kwargs()}"
            )
    return ModelToConvert(model, config, step, warnings)


def training_checkpoint_model(path, config):
    """The model of one of our training checkpoints (`path`: ckpt-N, or a run's folder for its
    latest), rebuilt from the run record beside it (a pre-trainer when there is none) on
    `config`, with its weights. Returns (model, global step from the checkpoint's name or None);
    errors start with `checkpoint_to_convert=` and the path."""
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if not latest:
            raise ValueError(f"checkpoint_to_convert={path} is a directory without a checkpoint")
        path = latest
    encoder = BertEncoder.from_bert_config(config)
    with sources.prefixed(f"checkpoint_to_convert={path}: "):
        found = run_record.read(os.path.dirname(path))
        model = found.task_kind.build_model(found, encoder) if found else BertPretrainer(encoder)
        sources.restored(model, path)
    step = re.search(r"-(\d+)$", path)  # the loop names checkpoints after their global step
    return model, int(step.group(1)) if step else None


def to_original(source, converted_checkpoint_path, global_step=None):
    """Writes `source` (a `ModelToConvert`) as an original-layout checkpoint at the prefix
    `converted_checkpoint_path`, bert_config.json beside it; `global_step` defaults to the
    training checkpoint's own. Returns the prefix written."""
    step = global_step if global_step is not None else source.global_step
    with _writing():
        return save_original_checkpoint(
            source.model, converted_checkpoint_path, global_step=step, bert_config=source.bert_config
        )
