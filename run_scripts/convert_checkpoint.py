"""Convert BERT checkpoints between Google's original layout and this package's `.keras` files.

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

--checkpoint_to_convert may also be a checkpoint of our training loop (`OUTPUT_DIR/ckpt-N`, or
OUTPUT_DIR for its latest): run_pretraining's (a BertPretrainer), run_classifier's (a fine-tuned
BertClassifier, written with the original's top-level output_weights/output_bias) or run_squad's
(cls/squad/output_weights/output_bias), read with the bert_config.json and fine_tuning_task.json
the run left beside it.
"""

import os

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.checkpoints import convert
from bert_tf.io_utils import check_keras_file, check_output_file, error_line
from run_scripts.common_flags import fail, library_call, load_bert_config

FLAGS = flags.FLAGS

flags.DEFINE_enum("direction", None, ["to_keras", "to_original"], "Which way to convert.")
flags.DEFINE_string(
    "bert_config_file", None,
    "to_keras: the original bert_config.json (required). to_original: optional; when given, "
    "it is written beside the checkpoint (keeping its extra keys) after checking it matches.",
)
flags.DEFINE_string(
    "checkpoint_to_convert", None, "to_keras: an original checkpoint prefix; to_original: a .keras file."
)
flags.DEFINE_string(
    "converted_checkpoint_path", None,
    "to_keras: the .keras file to write; to_original: the checkpoint prefix to write (e.g. out/bert_model.ckpt).",
)
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


def to_keras():
    if not FLAGS.bert_config_file:
        fail("--direction=to_keras needs --bert_config_file")
    if not FLAGS.converted_checkpoint_path.endswith(".keras"):
        fail(f"--converted_checkpoint_path={FLAGS.converted_checkpoint_path} must end in .keras")
    config = load_bert_config(FLAGS.bert_config_file)
    model = library_call(lambda: convert.original_model(FLAGS.checkpoint_to_convert, config, FLAGS.model), "--")
    report = _writing(lambda: convert.to_keras(model, FLAGS.checkpoint_to_convert, FLAGS.converted_checkpoint_path))
    logging.info(
        "Loaded %d variables (%d unused, %d optimizer/step variables skipped) into a %s; wrote %s",
        len(report.loaded), len(report.unused), len(report.ignored), type(model).__name__,
        FLAGS.converted_checkpoint_path,
    )


def to_original():
    library_call(lambda: check_keras_file(FLAGS.checkpoint_to_convert, "checkpoint_to_convert"))  # names its flag
    source = library_call(lambda: convert.read_model(FLAGS.checkpoint_to_convert, FLAGS.bert_config_file), "--")
    for warning in source.warnings:
        logging.warning("--%s", warning)
    prefix = _writing(lambda: convert.to_original(source, FLAGS.converted_checkpoint_path, FLAGS.global_step))
    logging.info("Wrote an original-layout checkpoint of a %s to %s", type(source.model).__name__, prefix)


def _writing(work):
    """The library call `work` (errors naming the checkpoint read), a failed write as one line."""
    try:
        return library_call(work)
    except convert.WriteFailed as e:
        fail(f"writing --converted_checkpoint_path={FLAGS.converted_checkpoint_path} failed: {error_line(e.__cause__)}")


def _check_paths():
    """Before any work: the output can be written and is not the checkpoint being converted."""
    output = FLAGS.converted_checkpoint_path
    if FLAGS.direction == "to_original" and os.path.isdir(output):
        fail(
            f"--converted_checkpoint_path={output} is a directory; give a checkpoint prefix such as "
            f"{os.path.join(output, 'bert_model.ckpt')}"
        )
    library_call(lambda: check_output_file(output, "converted_checkpoint_path"))  # names its flag
    if os.path.abspath(output) == os.path.abspath(FLAGS.checkpoint_to_convert):
        fail(f"--converted_checkpoint_path={output} is --checkpoint_to_convert: it would be overwritten")


def main(argv):
    del argv
    _check_paths()
    if FLAGS.direction == "to_keras":
        to_keras()
    else:
        to_original()


if __name__ == "__main__":
    app.run(main)
