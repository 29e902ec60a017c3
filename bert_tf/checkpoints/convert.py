"""Conversion between Google's original checkpoint layout and this package's models: which model an
original checkpoint holds, and the model of one of our training runs (TensorFlow)."""

import os
import re

import tensorflow as tf

from bert_tf.checkpoints.original import list_original_variables
from bert_tf.checkpoints.sources import restored
from bert_tf.models import BertEncoder, BertPretrainer
from bert_tf.tasks import record as run_record
from bert_tf.tasks import registry
from bert_tf.tasks.record import RunRecord

# The models convert_checkpoint builds from an original checkpoint: the release's own, and the
# fine-tuned models of the original's two fine-tuning scripts (their kinds' names).
ORIGINAL_MODELS = ("encoder", "pretrainer", "classifier", "squad")


def original_model_kind(names):
    """What an original checkpoint holds, from its variable names: "pretrainer" (the cls/ heads),
    a task kind whose head variables it has (the classifier's output_weights first, then SQuAD's),
    else "encoder"."""
    if "cls/predictions/output_bias" in names:
        return "pretrainer"
    for name in ("classifier", "squad"):
        if registry.get(name).head_names[0] in names:
            return name
    return "encoder"


def model_for_original(checkpoint, config, kind="auto"):
    """An unloaded model for the original checkpoint at `checkpoint`: `kind` one of
    ORIGINAL_MODELS ("span_labeler" is squad's earlier name) or "auto" (`original_model_kind`)."""
    names = list_original_variables(checkpoint)
    kind = original_model_kind(names) if kind == "auto" else kind
    encoder = BertEncoder.from_bert_config(config)
    if kind == "pretrainer":
        return BertPretrainer(encoder)
    if kind == "encoder":
        return encoder
    task_kind = registry.get(kind)
    head = task_kind.head_names[0]
    if task_kind.name == "classifier":
        if head not in names:
            raise ValueError(f"{checkpoint} has no {head} (not a fine-tuned classifier)")
        return task_kind.model_class(encoder, num_classes=names[head][0])
    return task_kind.build_model(RunRecord(kind=task_kind.name, task_name=task_kind.name), encoder)


def has_original_layout(model):
    """Whether `model` can be written in the original layout: the encoder, the pre-trainer, and
    every task kind's model (their heads have original names)."""
    return isinstance(model, (BertEncoder, BertPretrainer)) or registry.of_model(model) is not None


def original_layout_models():
    return ["BertEncoder", "BertPretrainer", *(kind.model_class.__name__ for kind in registry.KINDS.values())]


def training_checkpoint_model(path, config):
    """The model of one of our training checkpoints (`path`: ckpt-N, or a run's folder for its
    latest), rebuilt from the run record beside it (a pre-trainer when there is none) on
    `config`, with its weights. Returns (model, global step from the checkpoint's name or None)."""
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if not latest:
            raise ValueError(f"{path} is a directory without a checkpoint")
        path = latest
    encoder = BertEncoder.from_bert_config(config)
    found = run_record.read(os.path.dirname(path))
    model = found.task_kind.build_model(found, encoder) if found else BertPretrainer(encoder)
    try:
        restored(model, path)
    except (ValueError, FileNotFoundError) as e:
        raise ValueError(f"{path}: {e}") from None
    step = re.search(r"-(\d+)$", path)  # the loop names checkpoints after their global step
    return model, int(step.group(1)) if step else None
