"""export_saved_model.py's library half: `export_saved_model(settings)` writes TF Hub's encoder or
preprocessor, or a fine-tuned model behind a serving signature that takes raw text, with every
check of the script.

The export is written under a temporary name and renamed when complete; an existing
`export_dir` is replaced only with `overwrite` (an empty one without it).
"""

import dataclasses
import os

from absl import logging

from bert_tf.errors import SettingError, reported
from bert_tf.export import check_export_dir, exports
from bert_tf.export.serving import MIXED_PRECISION, QUANTIZE_MODES, ServingOptions, choose_serving_jit_compile
from bert_tf.fields import Settings as _Base
from bert_tf.fields import given, setting, settings_class
from bert_tf.runs import registry

__all__ = ["Settings", "export_saved_model"]


# The settings a task's exporter takes as its own options (`TaskKind.export_options`).
EXPORT_OPTIONS = ("max_query_length", "doc_stride", "n_best_size", "max_answer_length", "null_score_diff_threshold")


@settings_class
class Settings(_Base):
    """export_saved_model.py's settings (its flags' names, defaults and help)."""

    export_type: str = setting(None, "What to export.", kind=str, choices=tuple(exports.EXPORT_TYPES), required=True)
    export_dir: str = setting(None, "The SavedModel directory to write.", kind=str, required=True)
    bert_config_file: str = setting(
        None, "The config json file corresponding to the pre-trained BERT model (default: the bert_config.json "
        "beside --init_checkpoint; a .keras file carries its own).", kind=str)
    init_checkpoint: str = setting(
        None, "The model: Google's checkpoint (bert_model.ckpt), ours (a run's folder or OUTPUT_DIR/ckpt-N), a .keras "
        "file or a Hugging Face folder (its config.json, vocab.txt and casing are the defaults).", kind=str)
    vocab_file: str = setting(
        None, "The vocabulary file that the BERT model was trained on (default: the vocab.txt beside "
        "--init_checkpoint).", kind=str)
    do_lower_case: bool = setting(
        True, "Whether to lower case the input text (True for uncased models; task exports: the run's casing).")
    seq_length: int = setting(
        128, "The packed sequence length of the preprocessor and of task exports (task exports: default the run's "
        "max_seq_length).")
    max_query_length: int = setting(None, "squad: question pieces kept (default: the run's, 64).", kind=int)
    doc_stride: int = setting(None, "squad, and runs that read long texts as windows: the pieces between window starts "
                              "(default: the run's; squad: else 128, as run_squad.py).", kind=int)
    n_best_size: int = setting(None, "squad: the n-best list's entries, as run_squad.py's flag (default 20).", kind=int)
    max_answer_length: int = setting(None, "squad: the longest answer, in pieces, as run_squad.py's flag (default 30).",
                                     kind=int)
    null_score_diff_threshold: float = setting(None, "squad v2.0: the null answer wins above this difference, as "
                                               "run_squad.py's flag (default 0.0).", kind=float)
    length_bucket: int = setting(
        None, "Text-in exports pad a request to its longest sequence rounded up to a multiple of this (at most "
        "--seq_length). Default: 8 where the serving function is XLA-compiled (one program per shape), else 1 (the "
        "exact longest).", kind=int)
    pad_to_max_seq_length: bool = setting(
        False, "Text-in exports pad every request to --seq_length (the original's fixed shapes).")
    quantize: str = setting(None, "Task exports: Dense kernels stored as int8 (dynamic range).", kind=str,
                            choices=tuple(QUANTIZE_MODES))
    serving_jit_compile: bool = setting(
        None, "Task exports: XLA-compile the model part of the serving function (one program per batch size and "
        "length bucket). Default: on with --quantize=int8; float weights: on a GPU, on CPU this machine's choice "
        "measured by `python bench/serving.py --save_defaults` (bert_tf.training.speed's file), else off. The choice "
        "follows the exporting machine: give it explicitly for an export made on one kind of machine and served on "
        "another.", kind=bool)
    skip_padding: bool = setting(
        None, "Task exports: a request with padding (texts of different lengths) runs the encoder's layers (all but "
        "attention's scores) on its real tokens alone; outputs on real tokens are alike. Default: on without XLA "
        "where the request's length is used; off with --serving_jit_compile (XLA takes no data-dependent shape) or "
        "--pad_to_max_seq_length.", kind=bool)
    mixed_precision: str = setting(
        "none", "Task exports: bf16 holds bfloat16 weights and runs the products in bfloat16, the LayerNorms, softmax "
        "and outputs in float32 (a precision change; fastest on CPUs with AVX512_BF16 or AMX; "
        "ServingOptions.mixed_precision). Turns --serving_jit_compile's default off (measured without XLA).",
        choices=("none", *MIXED_PRECISION))
    overwrite: bool = setting(False, "Replace an existing --export_dir.")


def _given(settings, name):
    """The setting's value when its maker gave it, else None (the library's default)."""
    return getattr(settings, name) if given(settings, name) else None


def _check(settings):
    """The settings against each other, before any model is read (a diverged run is a warning);
    returns the settings with a sentence-transformers folder's BERT module as `init_checkpoint`,
    the XLA choice (None for the encoder and the preprocessor, which have no serving function to
    compile) and the XLA setting."""
    from bert_tf.checkpoints import sentence_transformers, sources
    from bert_tf.training import divergence
    from bert_tf.training.settings import SKIP_PADDING_WITHOUT_XLA

    s = settings
    try:  # before any work
        check_export_dir(s.export_dir, s.overwrite, (s.init_checkpoint, s.vocab_file, s.bert_config_file))
    except FileExistsError as e:
        raise SettingError(f"--export_dir: {e}", "export_dir") from None
    with reported("--init_checkpoint: "):
        s = dataclasses.replace(s, init_checkpoint=sentence_transformers.bert_module_folder(s.init_checkpoint))
    if s.export_type != "preprocessor" and not s.init_checkpoint:
        raise SettingError(f"--export_type={s.export_type} needs --init_checkpoint", "init_checkpoint")
    with reported(flag_names=("init_checkpoint",)):
        sources.check_not_search(s.init_checkpoint, "init_checkpoint")
    warning = divergence.diverged_warning(s.init_checkpoint)
    if warning:
        logging.warning("--init_checkpoint: %s", warning)
    # The export options of the kinds whose exporters take them (SQuAD's question length and n-best
    # list, the windows' stride).
    for name in EXPORT_OPTIONS:
        asking = [kind.name for kind in registry.KINDS.values() if name in kind.export_options()]
        if getattr(s, name) is not None and s.export_type not in asking:
            raise SettingError(f"--{name} is for --export_type={' or '.join(asking)}, not {s.export_type}", name)
    for name in ("doc_stride", "n_best_size", "max_answer_length"):
        if getattr(s, name) is not None and getattr(s, name) < 1:
            raise SettingError(f"--{name}={getattr(s, name)} must be at least 1", name)
    if s.export_type == "preprocessor" and not s.vocab_file:
        raise SettingError("--export_type=preprocessor needs --vocab_file", "vocab_file")
    choice = None
    if s.export_type in registry.KINDS:  # the encoder and the preprocessor have no serving function to compile
        # A format's own XLA default names its setting (`mixed_precision=bf16`): written as the flag.
        with reported(flag_names=("quantize", "mixed_precision")):
            choice = choose_serving_jit_compile(s.serving_jit_compile, s.quantize,
                                                mixed_precision=_mixed_precision(s))
    jit_compile = choice.value if choice else s.serving_jit_compile
    if s.skip_padding is not None and s.export_type not in registry.KINDS:  # no model run per request
        raise SettingError(f"--skip_padding is for the task exports ({', '.join(registry.KINDS)}), "
                           f"not --export_type={s.export_type}", "skip_padding")
    if s.skip_padding is True and jit_compile:  # XLA may be on without the flag (int8, this machine's choice)
        raise SettingError(f"--skip_padding needs a serving function without XLA (--noserving_jit_compile): "
                           f"{SKIP_PADDING_WITHOUT_XLA}", "skip_padding")
    return s, choice, jit_compile


def _mixed_precision(settings):
    return None if settings.mixed_precision == "none" else settings.mixed_precision


def export_saved_model(settings):
    """Writes the SavedModel the settings ask for.

    Args:
        settings: A `Settings`.

    Returns:
        What was written, in words (e.g. "a BertClassifier of task 'classifier'").

    Raises:
        SettingError: A setting that cannot be used, before any work; or an export that appeared
            at `export_dir` meanwhile.
    """
    from bert_tf.training.prepare import log_jit_choice

    s, choice, jit_compile = _check(settings)
    with reported("--"):
        serving = ServingOptions.given(s.length_bucket, s.pad_to_max_seq_length, jit_compile, s.quantize,
                                       s.skip_padding, _mixed_precision(s))
    with reported():
        exports.check_casing(s.export_type, s.init_checkpoint, s.vocab_file, s.do_lower_case)
    with reported("--"):
        export = exports.read(s.export_type, s.init_checkpoint, s.bert_config_file, s.vocab_file,
                              _given(s, "do_lower_case"), _given(s, "seq_length"), serving=serving,
                              **{name: getattr(s, name) for name in EXPORT_OPTIONS})
    with reported(flag_names=("length_bucket", "pad_to_max_seq_length", "seq_length")):
        exports.check_length_bucket(s.length_bucket, s.pad_to_max_seq_length, export.seq_length)
    if choice is not None:
        log_jit_choice("serving_jit_compile", choice)
    for warning in export.warnings:
        logging.warning("--%s", warning)
    replacing = os.path.isdir(s.export_dir) and bool(os.listdir(s.export_dir))  # an earlier export
    try:
        with reported(flag_names=EXPORT_OPTIONS):  # the kind's exporter checks its own options
            what = export.write(s.export_dir, s.overwrite)
    except FileExistsError as e:  # an export appeared at export_dir meanwhile
        raise SettingError(str(e), "export_dir") from None
    logging.info("Exported %s to %s%s", what, s.export_dir, ", replacing the earlier export there" * replacing)
    if s.export_type in registry.KINDS:  # the process that serves it chooses its kernels as it loads
        from bert_tf import kernels

        logging.info("%s", kernels.serving_advice())
    return what
