"""convert_checkpoint.py's library half: `convert_checkpoint(settings)` converts a BERT checkpoint
between Google's original layout, this package's `.keras` files and Hugging Face folders, with
every check and guarantee of the script.

- `to_keras`: an original checkpoint (a BertPretrainer when it has the `cls/` heads, a
  BertClassifier when it has a fine-tuned classifier's `output_weights`, a BertSpanLabeler when it
  has run_squad's `cls/squad/output_weights`, else a BertEncoder) or a Hugging Face folder, written
  as a `.keras` file.
- `to_original`: a `.keras` file, a checkpoint of our training loop (`OUTPUT_DIR/ckpt-N`, or
  OUTPUT_DIR for its latest, rebuilt from the bert_config.json and fine_tuning_task.json its run
  left beside it) or a Hugging Face folder, written in the original layout with bert_config.json
  beside it.
- `to_hf`: the same sources, written as a Hugging Face folder with its vocabulary and casing.

A sentence-transformers folder is read as its BERT module's folder. Bad settings and paths raise
`bert_tf.errors.SettingError` before any work (the output can be written and is not the
checkpoint read); so does a damaged checkpoint, and a failed write (a full disk), which leaves no
partial file under the final names.
"""

import dataclasses
import os

from absl import logging

from bert_tf import fields
from bert_tf.checkpoints import convert, hf, sentence_transformers, sources
from bert_tf.errors import SettingError, reported
from bert_tf.fields import setting, settings_class
from bert_tf.io_utils import check_keras_file, check_output_dir, check_output_file, error_line
from bert_tf.runs.diverged import diverged_warning

__all__ = ["Settings", "convert_checkpoint"]

DIRECTIONS = ("to_keras", "to_original", "to_hf")


@settings_class
class Settings(fields.Settings):
    """convert_checkpoint.py's settings (its flags' names, defaults and help)."""

    direction: str = setting(None, "Which way to convert.", kind=str, choices=DIRECTIONS, required=True)
    bert_config_file: str = setting(
        None,
        "to_keras: the original bert_config.json (required, but for a Hugging Face folder). to_original: optional; "
        "when given, it is written beside the checkpoint (keeping its extra keys) after checking it matches.",
        kind=str, path=True,
    )
    checkpoint_to_convert: str = setting(
        None,
        "to_keras: an original checkpoint prefix; to_original, to_hf: a .keras file or a run's folder or ckpt-N; "
        "any: a Hugging Face folder.",
        kind=str, path=True, required=True,
    )
    converted_checkpoint_path: str = setting(
        None,
        "to_keras: the .keras file to write; to_original: the checkpoint prefix to write (e.g. "
        "out/bert_model.ckpt); to_hf: the folder to write.",
        kind=str, path=True, required=True,
    )
    vocab_file: str = setting(None, "to_hf: the vocabulary (default: the vocab.txt beside the checkpoint).", kind=str,
                              path=True)
    do_lower_case: bool = setting(None, "to_hf: the tokenizer's casing (default: the run's, else True).", kind=bool)
    model: str = setting(
        "auto",
        convert.model_help(),
        choices=convert.model_choices(),
    )
    global_step: int = setting(
        None,
        "to_original: a global_step to store, as the original does (default: a training checkpoint's own).",
        kind=int,
    )


def _writing(settings, work):
    """`work()` (errors naming the checkpoint read), a failed write raised as a SettingError naming
    converted_checkpoint_path."""
    try:
        with reported():
            return work()
    except convert.WriteFailed as e:
        raise SettingError(f"writing --converted_checkpoint_path={settings.converted_checkpoint_path} failed: "
                           f"{error_line(e.__cause__)}", "converted_checkpoint_path") from e


def _check_paths(settings):
    """Before any work: the checkpoint is not a search's folder (a diverged run's is warned of),
    the output can be written and is not the checkpoint being converted."""
    s, output = settings, settings.converted_checkpoint_path
    with reported(flag_names=("checkpoint_to_convert",)):
        sources.check_not_search(s.checkpoint_to_convert, "checkpoint_to_convert")
    warning = diverged_warning(s.checkpoint_to_convert)
    if warning:
        logging.warning("--checkpoint_to_convert: %s", warning)
    if s.direction == "to_original" and os.path.isdir(output):
        raise SettingError(
            f"--converted_checkpoint_path={output} is a directory; give a checkpoint prefix such as "
            f"{os.path.join(output, 'bert_model.ckpt')}", "converted_checkpoint_path"
        )
    if s.direction == "to_hf":
        with reported(setting="converted_checkpoint_path"):
            check_output_dir(output, "converted_checkpoint_path")
        with reported("--converted_checkpoint_path=", setting="converted_checkpoint_path"):
            hf.check_output_folder(output)
    else:
        with reported(setting="converted_checkpoint_path"):
            check_output_file(output, "converted_checkpoint_path")
    if os.path.abspath(output) == os.path.abspath(s.checkpoint_to_convert):
        raise SettingError(f"--converted_checkpoint_path={output} is --checkpoint_to_convert: it would be overwritten",
                           "converted_checkpoint_path")


def _to_keras(settings):
    """Original checkpoint (or Hugging Face folder) -> .keras file; returns the file written."""
    s = settings
    if not s.bert_config_file and not hf.is_hf_folder(s.checkpoint_to_convert):
        raise SettingError("--direction=to_keras needs --bert_config_file", "bert_config_file")
    if not s.converted_checkpoint_path.endswith(".keras"):
        raise SettingError(f"--converted_checkpoint_path={s.converted_checkpoint_path} must end in .keras",
                           "converted_checkpoint_path")
    config = None
    if s.bert_config_file:
        with reported("--", setting="bert_config_file"):
            config, warnings = sources.read_config(s.bert_config_file, "bert_config_file")
        for warning in warnings:
            logging.warning("--%s", warning)
    with reported("--"):
        model = convert.original_model(s.checkpoint_to_convert, config, s.model)
    report = _writing(s, lambda: convert.to_keras(model, s.checkpoint_to_convert, s.converted_checkpoint_path))
    logging.info(
        "Loaded %d variables (%d unused, %d optimizer/step variables skipped) into a %s; wrote %s",
        len(report.loaded), len(report.unused), len(report.ignored), type(model).__name__,
        s.converted_checkpoint_path,
    )
    return s.converted_checkpoint_path


def _to_original_or_hf(settings):
    """.keras file, training checkpoint or Hugging Face folder -> original layout or Hugging Face
    folder; returns the prefix or folder written."""
    s = settings
    path, output = s.checkpoint_to_convert, s.converted_checkpoint_path
    with reported(setting="checkpoint_to_convert"):
        check_keras_file(path, "checkpoint_to_convert")
    with reported("--"):
        source = convert.read_model(path, s.bert_config_file)
    for warning in source.warnings:
        logging.warning("--%s", warning)
    if s.direction == "to_original":
        prefix = _writing(s, lambda: convert.to_original(source, output, s.global_step))
        logging.info("Wrote an original-layout checkpoint of a %s to %s", type(source.model).__name__, prefix)
        return prefix
    with reported(flag_names=("vocab_file", "direction", "checkpoint_to_convert", "do_lower_case")):
        tokenizer = convert.hf_tokenizer(source, path, s.vocab_file, s.do_lower_case)
    with reported("--converted_checkpoint_path=", setting="converted_checkpoint_path"):
        replaced = hf.check_output_folder(output)
    architecture = _writing(s, lambda: convert.to_hf(source, output, *tokenizer))
    logging.info("Wrote a Hugging Face folder of a %s (%s) to %s%s", type(source.model).__name__, architecture, output,
                 ", replacing the one an earlier conversion wrote there" if replaced else "")
    return output




def convert_checkpoint(settings):
    """Converts a checkpoint as `settings` say: convert_checkpoint.py's run.

    Args:
        settings: A `Settings`. With `checkpoint_to_convert` a sentence-transformers folder, its
            BERT module's folder is converted (its modules checked first).

    Returns:
        The path written: the .keras file (to_keras), the checkpoint prefix (to_original) or the
        folder (to_hf).

    Raises:
        SettingError: A setting or path that cannot be used (before any work), a checkpoint that
            cannot be read or does not fit the model, or a failed write (a full disk), which
            leaves no partial file under the final names.
    """
    for field in fields.flag_fields(Settings):
        if field.metadata["required"] and getattr(settings, field.name) is None:
            raise SettingError(f"--{field.name} is required", field.name)
    _check_paths(settings)
    with reported("--checkpoint_to_convert: ", setting="checkpoint_to_convert"):
        folder = sentence_transformers.bert_module_folder(settings.checkpoint_to_convert)
    s = dataclasses.replace(settings, checkpoint_to_convert=folder)
    return _to_keras(s) if s.direction == "to_keras" else _to_original_or_hf(s)
