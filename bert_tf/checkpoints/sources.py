"""The model a checkpoint path names, whatever it is: Google's checkpoint, one of our training
checkpoints (a run's folder or its ckpt-N, with the files the run left beside it), a `.keras`
file or a Hugging Face folder, and the files found beside it. Used by the export and the conversion; errors are
ValueErrors (or FileNotFoundErrors) naming the path or, where a setting named it, the setting."""

import contextlib
import os
import warnings

from bert_tf.checkpoints import hf
from bert_tf.checkpoints.restore import load_keras_model, restore
from bert_tf.config import BertConfig
from bert_tf.errors import shown
from bert_tf.models import BertEncoder
from bert_tf.runs import record as run_record
from bert_tf.runs import registry
from bert_tf.runs.record import check_not_search  # noqa: F401 - the scripts' check, here with the other sources


@contextlib.contextmanager
def prefixed(prefix):
    """A ValueError or FileNotFoundError raised inside, raised again with `prefix` (the setting
    that named the file, e.g. "init_checkpoint=...: ") in front of its message."""
    try:
        yield
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{prefix}{e}") from None
    except ValueError as e:
        raise ValueError(f"{prefix}{e}") from None


CONFIG_FILE = "bert_config.json"  # beside Google's checkpoints and in our runs' folders
# The file beside a checkpoint that each of a script's file settings defaults to (`files_beside`).
FILES_BESIDE = {"vocab_file": hf.VOCAB, "bert_config_file": CONFIG_FILE}


def beside(checkpoint, name):
    """`name` in the checkpoint's folder (the folder itself, or the one holding the file), or None
    when there is no such file."""
    path = os.path.join(run_record.run_directory(checkpoint), name)
    return path if os.path.isfile(path) else None


def check_own_vocab(vocab_file, checkpoint):
    """A ValueError starting `vocab_file=...` when `checkpoint` is a Hugging Face folder or a run
    of ours (its folder, ckpt-N or .keras file) whose vocab.txt `vocab_file` does not match
    (`hf.check_same_vocab`): the rows of its word embeddings are those tokens. Other checkpoints
    (Google's, whose users may rewrite its [unused] tokens) are not compared."""
    if hf.is_hf_folder(checkpoint):
        hf.check_same_vocab(vocab_file, checkpoint)
    elif run_record.read(run_record.run_directory(checkpoint)) is not None:
        hf.check_same_vocab(vocab_file, run_record.run_directory(checkpoint))


def named_or_beside(path, setting, checkpoint, name):
    """The file `path` names (given as `setting`: a path that is no file is an error naming it),
    else `name` beside `checkpoint` (None when there is none, or no checkpoint). A vocabulary
    named for a Hugging Face folder or a run of ours must be its own (`hf.check_same_vocab`): the
    rows of its word embeddings are those tokens."""
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{shown(setting)}={path}: no such file")
        if name == hf.VOCAB and checkpoint:
            check_own_vocab(path, checkpoint)
        return path
    return beside(checkpoint, name) if checkpoint else None


def read_config(path, setting):
    """`(BertConfig, warnings)` of the bert_config.json at `path`, which `setting` gave: an
    unreadable file is an error, and each warning (a misspelt key) a line, starting with
    `setting`."""
    with prefixed(f"{shown(setting)}: "), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = BertConfig.from_json_file(path)
    return config, tuple(f"{shown(setting)}: {w.message}" for w in caught)


def hf_config(folder, bert_config_file=None, setting="init_checkpoint"):
    """`(BertConfig, warnings)` of the Hugging Face folder `folder` (which `setting` gave): its
    config.json's, or `bert_config_file`'s when given (it must compute the same model)."""
    given, warnings = read_config(bert_config_file, "bert_config_file") if bert_config_file else (None, ())
    found = hf.folder_settings(folder, given, bert_config_file, setting=setting)
    return found.config, warnings


def config_setting(bert_config_file, init_checkpoint):
    """What gave a script its config, for messages: bert_config_file, else the Hugging Face folder."""
    if bert_config_file:
        return f"{shown.bert_config_file}={bert_config_file}"
    return f"{shown.init_checkpoint}={init_checkpoint}"


def config_of(checkpoint, bert_config_file=None):
    """`(config, warnings)`: `bert_config_file`'s, else the bert_config.json beside `checkpoint` or a
    Hugging Face folder's config.json; `(None, ())` where there is none."""
    if hf.is_hf_folder(checkpoint):
        return hf_config(checkpoint, bert_config_file)
    path = named_or_beside(bert_config_file, "bert_config_file", checkpoint, "bert_config.json")
    return read_config(path, "bert_config_file") if path is not None else (None, ())


def casing(checkpoint, do_lower_case):
    """The casing that goes with `checkpoint`'s vocabulary: a Hugging Face folder's or a fine-tuning
    run's (its record's: its inputs were tokenized so), where a `do_lower_case` given must be it;
    else `do_lower_case` (True when not given)."""
    if checkpoint and hf.is_hf_folder(checkpoint):
        return hf.folder_settings(checkpoint, do_lower_case=do_lower_case).do_lower_case
    record = run_record.read(run_record.run_directory(checkpoint)) if checkpoint else None
    if record is not None:
        return run_casing(record, checkpoint, do_lower_case)
    return True if do_lower_case is None else do_lower_case


def run_casing(record, checkpoint, do_lower_case):
    """The casing of the fine-tuning run `record` (of `checkpoint`); a `do_lower_case` given must be it."""
    if do_lower_case is not None and do_lower_case != record.do_lower_case:
        raise ValueError(
            f"{shown.do_lower_case}={do_lower_case}, but the model in {run_record.run_directory(checkpoint)} was "
            f"fine-tuned with {shown.do_lower_case}={record.do_lower_case}"
        )
    return record.do_lower_case


def files_beside(checkpoint, vocab_file=None, bert_config_file=None, do_lower_case=None):
    """`{vocab_file, bert_config_file, do_lower_case}` for a script given `checkpoint` (a run's
    folder or one of its ckpt-N, a .keras file, Google's bert_model.ckpt in its release folder), as
    the exports take them: each file not given, the one beside the checkpoint (vocab.txt,
    bert_config.json; None when there is none); the casing, `casing`'s (without a checkpoint too).
    A `vocab_file` given for a run of ours must hold its vocab.txt's tokens (`hf.check_same_vocab`):
    its model was fine-tuned on those ids."""
    if vocab_file and checkpoint:
        check_own_vocab(vocab_file, checkpoint)
    found = {"vocab_file": vocab_file, "bert_config_file": bert_config_file}
    for setting, name in FILES_BESIDE.items():
        found[setting] = found[setting] or (beside(checkpoint, name) if checkpoint else None)
    return {**found, "do_lower_case": casing(checkpoint, do_lower_case)}


def restored(model, checkpoint):
    """`model` with `checkpoint`'s weights; a source that lacks a task model's head is an error."""
    report = restore(model, checkpoint)
    if report is not None and report.not_found:
        raise ValueError(
            f"{checkpoint} has no trained {type(model).__name__} head ({', '.join(report.not_found)}): "
            "use the output folder of a fine-tuning run"
        )
    return model


def from_keras_file(path, model_class, config=None):
    """The model a .keras file holds (its own dtype policy kept), checked against `model_class`
    (an encoder is taken out of a model that holds one) and `config` (when given)."""
    model = load_keras_model(path)
    if model_class is BertEncoder:
        model = getattr(model, "encoder", model)
    if not isinstance(model, model_class):
        raise ValueError(f"{path} holds a {type(model).__name__}, not a {model_class.__name__}")
    saved = getattr(model, "encoder", model).bert_config()
    if config is not None and config.encoder_kwargs() != saved.encoder_kwargs():
        raise ValueError(
            f"{path} was saved with another config than the one given: {saved.encoder_kwargs()} vs "
            f"{config.encoder_kwargs()}"
        )
    return model


def encoder(checkpoint, config):
    """The encoder of any checkpoint (of a pre-trainer's or fine-tuned model's too): from a .keras
    file (which brings its own config; `config`, when given, must match it), else built on
    `config` and restored."""
    if checkpoint.endswith(".keras"):
        return from_keras_file(checkpoint, BertEncoder, config)
    return restored(BertEncoder.from_bert_config(config), checkpoint)


def run_record_for(checkpoint, kind=None):
    """The run record beside a fine-tuning run's checkpoint, or the one a fine-tuned Hugging Face
    folder stands for (checked to be of `kind`, when given)."""
    directory = run_record.run_directory(checkpoint)
    if hf.is_hf_folder(checkpoint):
        found = hf.run_record(checkpoint)
        if found is None:
            raise ValueError(
                f"{checkpoint} is a Hugging Face folder of no fine-tuning task's model (architectures: "
                f"{hf.read_config(checkpoint).architecture}); expected one of {', '.join(hf.task_architectures())}"
            )
    else:
        found = run_record.read(directory)
    if found is None:
        wanted = f"the output folder of {registry.get(kind).script}" if kind else "a fine-tuning run's output folder"
        raise ValueError(f"{checkpoint}: no {run_record.FILE_NAME} in {directory}; expected {wanted}")
    if kind is not None and found.kind != registry.get(kind).name:
        raise ValueError(
            f"{checkpoint} holds a {found.kind} model (task {found.task_name!r}), not a {kind}: use the kind that "
            "matches it"
        )
    return found


def task_model(checkpoint, record, config):
    """The fine-tuned model of `record`'s kind, from a .keras file or a checkpoint; returns
    (model, config) (a .keras file brings its own config)."""
    kind = record.task_kind
    if checkpoint.endswith(".keras"):
        model = from_keras_file(checkpoint, kind.model_class_for(record), config)
        return model, model.encoder.bert_config()
    return restored(kind.build_model(record, BertEncoder.from_bert_config(config)), checkpoint), config
