"""Export BERT as a SavedModel: TF Hub's encoder and preprocessor, or a fine-tuned model behind a
serving signature that takes raw text.

    # The encoder (TF Hub's BERT encoder interface), from Google's layout, ours or a .keras file:
    python run_scripts/export_saved_model.py --export_type=encoder \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --export_dir=/tmp/bert_encoder

    # Its text preprocessor (TF Hub's BERT preprocessor interface):
    python run_scripts/export_saved_model.py --export_type=preprocessor \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True --export_dir=/tmp/bert_preprocess

    # A fine-tuned model: the output_dir of run_classifier.py / run_squad.py / run_ner.py /
    # run_swag.py holds everything the export needs (task, labels, config, vocab, casing).
    python run_scripts/export_saved_model.py --export_type=classifier \
      --init_checkpoint=/tmp/mrpc_output --export_dir=/tmp/mrpc_serving

--export_type=classifier|squad|ner|swag reads the run's fine_tuning_task.json, bert_config.json
and vocab.txt from the --init_checkpoint folder (a run's folder, one of its ckpt-N or a .keras
file in it; or a fine-tuned Hugging Face folder: its class, id2label, config.json, vocab.txt);
--bert_config_file and --vocab_file override them, --seq_length (default: the run's
max_seq_length) sets the longest packing: the text-in signatures (and the preprocessor's default
call) pad a request to its longest sequence rounded up to --length_bucket (default: 8 when the
serving function is XLA-compiled, one program per shape; else 1, the request's exact longest), or
always to --seq_length with --pad_to_max_seq_length; a batch with padding skips it in all but
attention's scores (--skip_padding, on by default without XLA). --quantize=int8 stores the Dense kernels as int8;
--serving_jit_compile XLA-compiles the model part of the serving function; unset, it is on with int8
and, for float weights, this machine's measured choice (`python bench/serving.py --save_defaults`,
bert_tf.training.speed; off without one, on for a GPU), logged with where it came from.
--mixed_precision=bf16 serves bfloat16 weights and products (float32 LayerNorms, softmax and
outputs). A process serving a float export runs one text faster with the environment variable
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 (bert_tf.export.common.model_runner says when it is safe). The
export is written under a temporary name and renamed when complete; an existing --export_dir is
replaced only with --overwrite (an empty one without it), keeping its permissions and group.
"""

import os

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.checkpoints import sources
from bert_tf.export import check_export_dir, exports
from bert_tf.export.serving import MIXED_PRECISION, QUANTIZE_MODES, ServingOptions, choose_serving_jit_compile
from bert_tf.runs import registry
from bert_tf.training import divergence
from bert_tf.training.prepare import log_jit_choice
from bert_tf.training.settings import SKIP_PADDING_WITHOUT_XLA
from run_scripts.flag_settings import as_flags, bert_module_from_flags, fail, library_call

FLAGS = flags.FLAGS

flags.DEFINE_enum("export_type", None, list(exports.EXPORT_TYPES), "What to export.")
flags.DEFINE_string("export_dir", None, "The SavedModel directory to write.")
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model (default: the bert_config.json "
    "beside --init_checkpoint; a .keras file carries its own).",
)
flags.DEFINE_string(
    "init_checkpoint", None,
    "The model: Google's checkpoint (bert_model.ckpt), ours (a run's folder or OUTPUT_DIR/ckpt-N), a .keras file "
    "or a Hugging Face folder (its config.json, vocab.txt and casing are the defaults).",
)
flags.DEFINE_string(
    "vocab_file", None,
    "The vocabulary file that the BERT model was trained on (default: the vocab.txt beside --init_checkpoint).",
)
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text (True for uncased models; task exports: the run's casing).",
)
flags.DEFINE_integer(
    "seq_length", 128,
    "The packed sequence length of the preprocessor and of task exports (task exports: default the run's "
    "max_seq_length).",
)
flags.DEFINE_integer("max_query_length", None, "squad: question pieces kept (default: the run's, 64).")
flags.DEFINE_integer(
    "length_bucket", None,
    "Text-in exports pad a request to its longest sequence rounded up to a multiple of this (at most --seq_length). "
    "Default: 8 where the serving function is XLA-compiled (one program per shape), else 1 (the exact longest).",
)
flags.DEFINE_bool(
    "pad_to_max_seq_length", False, "Text-in exports pad every request to --seq_length (the original's fixed shapes)."
)
flags.DEFINE_enum("quantize", None, list(QUANTIZE_MODES), "Task exports: Dense kernels stored as int8 (dynamic range).")
flags.DEFINE_bool(
    "serving_jit_compile", None,
    "Task exports: XLA-compile the model part of the serving function (one program per batch size and length "
    "bucket). Default: on with --quantize=int8; float weights: on a GPU, on CPU this machine's choice measured by "
    "`python bench/serving.py --save_defaults` (bert_tf.training.speed's file), else off. The choice follows the "
    "exporting machine: give it explicitly for an export made on one kind of machine and served on another.",
)
flags.DEFINE_bool(
    "skip_padding", None,
    "Task exports: a request with padding (texts of different lengths) runs the encoder's layers (all but attention's "
    "scores) on its real tokens alone; outputs on real tokens are alike. Default: on without XLA where the request's "
    "length is used; off with --serving_jit_compile (XLA takes no data-dependent shape) or --pad_to_max_seq_length.",
)
flags.DEFINE_enum(
    "mixed_precision", "none", ["none", *MIXED_PRECISION],
    "Task exports: bf16 holds bfloat16 weights and runs the products in bfloat16, the LayerNorms, softmax and outputs "
    "in float32 (a precision change; fastest on CPUs with AVX512_BF16 or AMX; ServingOptions.mixed_precision). "
    "Turns --serving_jit_compile's default off (measured without XLA).",
)
flags.DEFINE_bool("overwrite", False, "Replace an existing --export_dir.")

for _name in ("export_type", "export_dir"):
    flags.mark_flag_as_required(_name)


def _given(name):
    """The flag's value when given on the command line, else None (the library's default)."""
    return FLAGS[name].value if FLAGS[name].present else None


def main(argv):
    del argv
    try:
        inputs = (FLAGS.init_checkpoint, FLAGS.vocab_file, FLAGS.bert_config_file)
        check_export_dir(FLAGS.export_dir, FLAGS.overwrite, inputs)  # before any work
    except FileExistsError as e:
        fail(f"--export_dir: {e}")
    bert_module_from_flags(FLAGS)
    if FLAGS.export_type != "preprocessor" and not FLAGS.init_checkpoint:
        fail(f"--export_type={FLAGS.export_type} needs --init_checkpoint")
    library_call(lambda: sources.check_not_search(FLAGS.init_checkpoint, "init_checkpoint"),
                 flag_names=("init_checkpoint",))
    warning = divergence.diverged_warning(FLAGS.init_checkpoint)
    if warning:
        logging.warning("--init_checkpoint: %s", warning)
    if FLAGS.max_query_length is not None and FLAGS.export_type != "squad":
        fail(f"--max_query_length is for --export_type=squad, not {FLAGS.export_type}")
    if FLAGS.export_type == "preprocessor" and not FLAGS.vocab_file:
        fail("--export_type=preprocessor needs --vocab_file")
    jit_compile = FLAGS.serving_jit_compile
    mixed_precision = None if FLAGS.mixed_precision == "none" else FLAGS.mixed_precision
    if FLAGS.export_type in registry.KINDS:  # the encoder and the preprocessor have no serving function to compile
        choice = choose_serving_jit_compile(jit_compile, FLAGS.quantize, mixed_precision=mixed_precision)
        jit_compile = choice.value  # logged once the options and the run are accepted
    if FLAGS.skip_padding is not None and FLAGS.export_type not in registry.KINDS:  # no model run per request
        fail(f"--skip_padding is for the task exports ({', '.join(registry.KINDS)}), "
             f"not --export_type={FLAGS.export_type}")
    if FLAGS.skip_padding is True and jit_compile:  # XLA may be on without the flag (int8, this machine's choice)
        fail(f"--skip_padding needs a serving function without XLA (--noserving_jit_compile): "
             f"{SKIP_PADDING_WITHOUT_XLA}")
    serving = library_call(lambda: ServingOptions.given(FLAGS.length_bucket, FLAGS.pad_to_max_seq_length, jit_compile,
                                                        FLAGS.quantize, FLAGS.skip_padding, mixed_precision), "--")
    library_call(
        lambda: exports.check_casing(FLAGS.export_type, FLAGS.init_checkpoint, FLAGS.vocab_file, FLAGS.do_lower_case)
    )
    export = library_call(
        lambda: exports.read(
            FLAGS.export_type, FLAGS.init_checkpoint, FLAGS.bert_config_file, FLAGS.vocab_file,
            _given("do_lower_case"), _given("seq_length"), FLAGS.max_query_length, serving,
        ),
        "--",
    )
    library_call(lambda: exports.check_length_bucket(FLAGS.length_bucket, FLAGS.pad_to_max_seq_length,
                                                      export.seq_length),
                 flag_names=("length_bucket", "pad_to_max_seq_length", "seq_length"))
    if FLAGS.export_type in registry.KINDS:
        # A format's own XLA default names its setting (`mixed_precision=bf16`): written as the flag.
        source = as_flags(choice.source, ("quantize", "mixed_precision"))
        log_jit_choice("serving_jit_compile", choice._replace(source=source))
    for warning in export.warnings:
        logging.warning("--%s", warning)
    replacing = os.path.isdir(FLAGS.export_dir) and bool(os.listdir(FLAGS.export_dir))  # an earlier export
    try:
        what = library_call(lambda: export.write(FLAGS.export_dir, FLAGS.overwrite))
    except FileExistsError as e:  # an export appeared at --export_dir meanwhile
        fail(str(e))
    logging.info("Exported %s to %s%s", what, FLAGS.export_dir, ", replacing the earlier export there" * replacing)
    if FLAGS.export_type in registry.KINDS:  # the process that serves it chooses its kernels as it loads
        from bert_tf import kernels

        logging.info("%s", kernels.serving_advice())


if __name__ == "__main__":
    app.run(main)
