"""extract_features.py's library half: `extract_features(settings)` writes the per-token hidden
states of chosen layers as the original's JSON lines, with every check of the script
(`bert_tf.feature_extraction` does the work).

`init_checkpoint` takes Google's original checkpoints, this package's `.keras` files, Hugging Face
folders (their config.json, vocab.txt and casing stand in for `bert_config_file`, `vocab_file`
and `do_lower_case`) and sentence-transformers folders (their BERT module). Bad paths and
settings raise `bert_tf.errors.SettingError` before any work; the output is written under a
temporary name and renamed when complete (a failed write, a full disk included, leaves nothing);
invalid UTF-8 in the input is replaced, with a warning.
"""

import dataclasses
import os

from absl import logging

from bert_tf import feature_extraction, tokenization
from bert_tf.errors import SettingError, reported
from bert_tf.fields import like, setting, settings_class
from bert_tf.io_utils import check_distinct_outputs, check_keras_file, check_output_file
from bert_tf.training import prepare
from bert_tf.training.groups import Padding, Sources, Tpu

__all__ = ["Settings", "extract_features"]


@settings_class
class Settings(Tpu):
    """extract_features.py's settings: the original's flags (names, defaults and help), and ours."""

    # The required fields come in the order a script reports the missing ones: input_file,
    # init_checkpoint and output_file, then vocab_file and bert_config_file (which a Hugging Face
    # init_checkpoint may hold instead).
    input_file: str = setting(None, "Text file: one example per line, `A` or `A ||| B`.", kind=str, required=True)
    init_checkpoint: str = like(Sources, "init_checkpoint", shared=None, order=None, required=True)
    output_file: str = setting(None, "Where to write the JSON lines.", kind=str, required=True)
    layers: str = setting("-1,-2,-3,-4", "Comma-separated layer indexes (-1 = last layer).")
    vocab_file: str = like(Sources, "vocab_file", shared=None, order=None, compared_by_content=False)
    bert_config_file: str = setting(
        None, "The config json file corresponding to the pre-trained BERT model. This specifies the model "
        "architecture.", kind=str, path=True, required="unless_folder")
    max_seq_length: int = setting(
        128, "The maximum total input sequence length after WordPiece tokenization. Sequences longer than this will "
        "be truncated, and sequences shorter than this will be padded.")
    do_lower_case: bool = setting(
        True, "Whether to lower case the input text. Should be True for uncased models and False for cased models.")
    batch_size: int = setting(32, "Batch size for predictions.")
    use_one_hot_embeddings: bool = setting(
        False, "Accepted for compatibility with the original; embedding lookups here are gathers on every device, so "
        "it changes nothing.")
    length_bucket: int = like(Padding, "length_bucket")
    pad_to_max_seq_length: bool = like(Padding, "pad_to_max_seq_length")


def _sources(settings):
    """The settings with what the starting checkpoint implies (a sentence-transformers folder's
    BERT module; a Hugging Face folder's vocabulary and casing, or the files beside the
    checkpoint), checked against its name's casing, and the model's BertConfig."""
    from bert_tf.checkpoints import sentence_transformers

    s = settings
    with reported("--init_checkpoint: ", setting="init_checkpoint"):
        s = dataclasses.replace(s, init_checkpoint=sentence_transformers.bert_module_folder(s.init_checkpoint))
    with reported(setting="do_lower_case"):
        tokenization.validate_case_matches_checkpoint(s.do_lower_case, s.init_checkpoint)
    with reported():
        s, config = prepare.resolve_sources(s)
    return s, config or prepare.load_config(s.bert_config_file)


def _tokenizer(settings):
    """The FullTokenizer of `vocab_file`."""
    s = settings
    if os.path.isdir(s.vocab_file):
        raise SettingError(f"--vocab_file={s.vocab_file} is a directory, not a file", "vocab_file")
    with reported("--vocab_file: ", setting="vocab_file"):
        return tokenization.FullTokenizer(s.vocab_file, do_lower_case=s.do_lower_case)


def _check_inputs(settings, config, tokenizer):
    """Every check that can fail, before any model is built or any output written."""
    from bert_tf.checkpoints import sources

    s = settings
    source = sources.config_setting(s.bert_config_file, s.init_checkpoint)
    with reported(f"--max_seq_length={s.max_seq_length} vs max_position_embeddings of --{source}: ",
                  setting="max_seq_length"):
        config.check_seq_length(s.max_seq_length)
    with reported(f"--vocab_file vs --{source}: ", setting="vocab_file"):
        config.check_vocab_size(len(tokenizer.vocab), s.vocab_file)
    with reported("--"):  # the messages start with the setting at fault
        feature_extraction.check_inputs(tokenizer.vocab, s.vocab_file, s.input_file, s.max_seq_length, s.batch_size)
    inputs = [(name, getattr(s, name)) for name in ("input_file", "vocab_file", "bert_config_file")]
    inputs = [(name, path) for name, path in inputs if path]  # no bert_config_file with a Hugging Face folder
    with reported(setting="output_file"):
        check_output_file(s.output_file)
        check_distinct_outputs([s.output_file], inputs)
    with reported(setting="init_checkpoint"):
        check_keras_file(s.init_checkpoint, "init_checkpoint")


def _log(level, line):
    logging.log(level, "%s", line)


def extract_features(settings):
    """Writes one JSON line of features per line of `input_file` to `output_file`, as the
    original extract_features.py does: extract_features.py's run.

    Args:
        settings: A `Settings`.

    Returns:
        A `bert_tf.feature_extraction.Written`: the lines written, the input's invalid UTF-8
        replaced, and the time taken.

    Raises:
        SettingError: A setting, path or checkpoint that cannot be used (before any work); a
            failed write (a full disk: nothing is left behind); or the model's outputs holding
            NaN or Inf (nothing is written either).
    """
    s, config = _sources(settings)
    length_bucket, _ = prepare.padding(s)
    tokenizer = _tokenizer(s)
    _check_inputs(s, config, tokenizer)
    with reported("--layers: ", setting="layers"):
        layer_indexes = feature_extraction.parse_layer_indexes(s.layers, config.num_hidden_layers)
    scope = prepare.tpu_strategy(s).scope() if s.use_tpu else None
    with reported(f"--init_checkpoint={s.init_checkpoint}: ", setting="init_checkpoint"):
        encoder, unused = feature_extraction.restore_encoder(config, s.init_checkpoint, scope)
    if unused:
        logging.info("Checkpoint variables not used by the encoder: %d", len(unused))

    try:
        written = feature_extraction.write_features(
            encoder, tokenizer, s.input_file, s.output_file, s.max_seq_length, layer_indexes, s.batch_size, log=_log,
            prefix="--", length_bucket=length_bucket,
        )
    except OSError as e:  # a full disk, for one: nothing is left behind
        raise SettingError(f"writing --output_file={s.output_file} failed: {e.strerror or e}", "output_file") from e
    except FloatingPointError as e:  # the model's outputs overflow: nothing is left behind either
        raise SettingError(f"--init_checkpoint={s.init_checkpoint}: {e}", "init_checkpoint") from e
    for level, line in written.report(prefix="--"):
        _log(level, line)
    return written
