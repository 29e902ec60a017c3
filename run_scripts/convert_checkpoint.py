"""Convert BERT checkpoints between Google's original layout, this package's `.keras` files and
Hugging Face folders.

Original -> Keras (a BertPretrainer when the checkpoint has the `cls/` heads, a BertClassifier
when it has a fine-tuned classifier's `output_weights`, a BertSpanLabeler when it has
run_squad's `cls/squad/output_weights`, else a BertEncoder):
    python run_scripts/convert_checkpoint.py --direction=to_keras \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --checkpoint_to_convert=$BERT_BASE_DIR/bert_model.ckpt \
      --converted_checkpoint_path=bert_base.keras

Keras -> original (readable by the original release's code; bert_config.json written beside it):
    python run_scripts/convert_checkpoint.py --direction=to_original \
      --checkpoint_to_convert=bert_base.keras \
      --converted_checkpoint_path=exported/bert_model.ckpt

-> a Hugging Face folder (--vocab_file: default the vocab.txt beside it; the casing: the run's):
    python run_scripts/convert_checkpoint.py --direction=to_hf \
      --checkpoint_to_convert=/tmp/mrpc_output --converted_checkpoint_path=/tmp/mrpc_hf

--checkpoint_to_convert may also be a checkpoint of our training loop (`OUTPUT_DIR/ckpt-N`, or
OUTPUT_DIR for its latest): run_pretraining's (a BertPretrainer) or a fine-tuning run's (its task
model, written with the original's head names), read with the bert_config.json and
fine_tuning_task.json the run left beside it; or a Hugging Face folder (to_keras, to_original).
"""

import os

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.checkpoints import convert, hf, sources
from bert_tf.io_utils import check_keras_file, check_output_dir, check_output_file, error_line
from bert_tf.training import divergence
from run_scripts.flag_settings import bert_module_from_flags, fail, library_call, load_bert_config

FLAGS = flags.FLAGS

flags.DEFINE_enum("direction", None, ["to_keras", "to_original", "to_hf"], "Which way to convert.")
flags.DEFINE_string(
    "bert_config_file", None,
    "to_keras: the original bert_config.json (required, but for a Hugging Face folder). to_original: optional; "
    "when given, it is written beside the checkpoint (keeping its extra keys) after checking it matches.",
)
flags.DEFINE_string(
    "checkpoint_to_convert", None,
    "to_keras: an original checkpoint prefix; to_original, to_hf: a .keras file or a run's folder or ckpt-N; "
    "any: a Hugging Face folder.",
)
flags.DEFINE_string(
    "converted_checkpoint_path", None,
    "to_keras: the .keras file to write; to_original: the checkpoint prefix to write (e.g. out/bert_model.ckpt); "
    "to_hf: the folder to write.",
)
flags.DEFINE_string("vocab_file", None, "to_hf: the vocabulary (default: the vocab.txt beside the checkpoint).")
flags.DEFINE_bool("do_lower_case", None, "to_hf: the tokenizer's casing (default: the run's, else True).")
flags.DEFINE_enum(
    "model", "auto", list(convert.MODEL_CHOICES),
    "to_keras: what to build. auto = pretrainer if the checkpoint has the cls/ heads, classifier "
    "if it has output_weights, squad if it has cls/squad/output_weights, else encoder "
    "(span_labeler: squad's earlier name).",
)
flags.DEFINE_integer(
    "global_step", None,
    "to_original: a global_step to store, as the original does (default: a training checkpoint's own).",
)

for _name in ("direction", "checkpoint_to_convert", "converted_checkpoint_path"):
    flags.mark_flag_as_required(_name)


def _to_keras():
    if not FLAGS.bert_config_file and not hf.is_hf_folder(FLAGS.checkpoint_to_convert):
        fail("--direction=to_keras needs --bert_config_file")
    if not FLAGS.converted_checkpoint_path.endswith(".keras"):
        fail(f"--converted_checkpoint_path={FLAGS.converted_checkpoint_path} must end in .keras")
    config = load_bert_config(FLAGS.bert_config_file) if FLAGS.bert_config_file else None
    model = library_call(lambda: convert.original_model(FLAGS.checkpoint_to_convert, config, FLAGS.model), "--")
    report = _writing(lambda: convert.to_keras(model, FLAGS.checkpoint_to_convert, FLAGS.converted_checkpoint_path))
    logging.info(
        "Loaded %d variables (%d unused, %d optimizer/step variables skipped) into a %s; wrote %s",
        len(report.loaded), len(report.unused), len(report.ignored), type(model).__name__,
        FLAGS.converted_checkpoint_path,
    )


def _to_original_or_hf():
    path, output = FLAGS.checkpoint_to_convert, FLAGS.converted_checkpoint_path
    library_call(lambda: check_keras_file(path, "checkpoint_to_convert"))  # names its flag
    source = library_call(lambda: convert.read_model(path, FLAGS.bert_config_file), "--")
    for warning in source.warnings:
        logging.warning("--%s", warning)
    if FLAGS.direction == "to_original":
        prefix = _writing(lambda: convert.to_original(source, output, FLAGS.global_step))
        logging.info("Wrote an original-layout checkpoint of a %s to %s", type(source.model).__name__, prefix)
        return
    tokenizer = library_call(
        lambda: convert.hf_tokenizer(source, path, FLAGS.vocab_file, FLAGS.do_lower_case),
        flag_names=("vocab_file", "direction", "checkpoint_to_convert", "do_lower_case"),
    )
    replaced = library_call(lambda: hf.check_output_folder(output), "--converted_checkpoint_path=")
    architecture = _writing(lambda: convert.to_hf(source, output, *tokenizer))
    logging.info("Wrote a Hugging Face folder of a %s (%s) to %s%s", type(source.model).__name__, architecture, output,
                 ", replacing the one an earlier conversion wrote there" if replaced else "")


def _writing(work):
    """The library call `work` (errors naming the checkpoint read), a failed write as one line."""
    try:
        return library_call(work)
    except convert.WriteFailed as e:
        fail(f"writing --converted_checkpoint_path={FLAGS.converted_checkpoint_path} failed: {error_line(e.__cause__)}")


def _check_paths():
    """Before any work: the output can be written and is not the checkpoint being converted."""
    output = FLAGS.converted_checkpoint_path
    library_call(lambda: sources.check_not_search(FLAGS.checkpoint_to_convert, "checkpoint_to_convert"),
                 flag_names=("checkpoint_to_convert",))
    warning = divergence.diverged_warning(FLAGS.checkpoint_to_convert)
    if warning:
        logging.warning("--checkpoint_to_convert: %s", warning)
    if FLAGS.direction == "to_original" and os.path.isdir(output):
        fail(
            f"--converted_checkpoint_path={output} is a directory; give a checkpoint prefix such as "
            f"{os.path.join(output, 'bert_model.ckpt')}"
        )
    if FLAGS.direction == "to_hf":
        library_call(lambda: check_output_dir(output, "converted_checkpoint_path"))  # names its flag
        library_call(lambda: hf.check_output_folder(output), "--converted_checkpoint_path=")
    else:
        library_call(lambda: check_output_file(output, "converted_checkpoint_path"))  # names its flag
    if os.path.abspath(output) == os.path.abspath(FLAGS.checkpoint_to_convert):
        fail(f"--converted_checkpoint_path={output} is --checkpoint_to_convert: it would be overwritten")


def main(argv):
    del argv
    _check_paths()
    bert_module_from_flags(FLAGS, "checkpoint_to_convert")
    if FLAGS.direction == "to_keras":
        _to_keras()
    else:
        _to_original_or_hf()


if __name__ == "__main__":
    app.run(main)
