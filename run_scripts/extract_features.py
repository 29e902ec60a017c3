"""Extract pre-computed per-token feature vectors from BERT (the original's script and flags).

    python run_scripts/extract_features.py \
      --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

One JSON line per input line (`A` or `A ||| B`), as the original writes it. `--init_checkpoint`
takes Google's original checkpoints, this package's `.keras` files and Hugging Face folders (their
config.json, vocab.txt and casing stand in for --bert_config_file, --vocab_file, --do_lower_case).
Bad paths and flags are errors before any work; the output is written under a temporary name
and renamed when complete (a failed write, a full disk included, leaves nothing); invalid UTF-8
in the input is replaced, with a warning.
"""

import os

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf import feature_extraction, tokenization
from bert_tf.checkpoints import sources
from bert_tf.io_utils import check_distinct_outputs, check_keras_file, check_output_file
from run_scripts import common_flags, flag_settings, settings_flags
from run_scripts.flag_settings import fail, library_call, load_bert_config

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Text file: one example per line, `A` or `A ||| B`.")
flags.DEFINE_string("output_file", None, "Where to write the JSON lines.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated layer indexes (-1 = last layer).")
flags.DEFINE_string(
    "bert_config_file",
    None,
    "The config json file corresponding to the pre-trained BERT model. This specifies the model architecture.",
)
flags.DEFINE_integer(
    "max_seq_length",
    128,
    "The maximum total input sequence length after WordPiece tokenization. Sequences longer than this will be "
    "truncated, and sequences shorter than this will be padded.",
)
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case",
    True,
    "Whether to lower case the input text. Should be True for uncased models and False for cased models.",
)
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool(
    "use_one_hot_embeddings",
    False,
    "Accepted for compatibility with the original; embedding lookups here are gathers on "
    "every device, so it changes nothing.",
)
common_flags.define_tpu_flags()
common_flags.define_padding_flags(training=False)

for _name in ("input_file", "init_checkpoint", "output_file"):
    flags.mark_flag_as_required(_name)
settings_flags.require_unless_hf_folder(("vocab_file", "bert_config_file"))  # a Hugging Face --init_checkpoint has both


def _check_inputs(config, tokenizer):
    """Every check that can fail, before any model is built or any output written."""
    source = sources.config_setting(FLAGS.bert_config_file, FLAGS.init_checkpoint)
    library_call(
        lambda: config.check_seq_length(FLAGS.max_seq_length),
        f"--max_seq_length={FLAGS.max_seq_length} vs max_position_embeddings of --{source}: ",
    )
    library_call(
        lambda: config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file), f"--vocab_file vs --{source}: "
    )
    library_call(
        lambda: feature_extraction.check_inputs(
            tokenizer.vocab, FLAGS.vocab_file, FLAGS.input_file, FLAGS.max_seq_length, FLAGS.batch_size
        ),
        "--",
    )
    inputs = [(flag, FLAGS[flag].value) for flag in ("input_file", "vocab_file", "bert_config_file")]
    inputs = [(flag, path) for flag, path in inputs if path]  # no --bert_config_file with a Hugging Face folder
    library_call(lambda: check_output_file(FLAGS.output_file))
    library_call(lambda: check_distinct_outputs([FLAGS.output_file], inputs))
    library_call(lambda: check_keras_file(FLAGS.init_checkpoint, "init_checkpoint"))


def main(argv):
    del argv
    flag_settings.bert_module_from_flags(FLAGS)
    library_call(lambda: tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint))
    config = flag_settings.hf_folder_flags(FLAGS) or load_bert_config(FLAGS.bert_config_file)
    length_bucket, _ = flag_settings.padding_from_flags(FLAGS)
    if os.path.isdir(FLAGS.vocab_file):
        fail(f"--vocab_file={FLAGS.vocab_file} is a directory, not a file")
    tokenizer = library_call(
        lambda: tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case), "--vocab_file: "
    )
    _check_inputs(config, tokenizer)
    layer_indexes = library_call(
        lambda: feature_extraction.parse_layer_indexes(FLAGS.layers, config.num_hidden_layers), "--layers: "
    )
    scope = flag_settings.tpu_strategy_from_flags(FLAGS).scope() if FLAGS.use_tpu else None
    encoder, unused = library_call(
        lambda: feature_extraction.restore_encoder(config, FLAGS.init_checkpoint, scope),
        f"--init_checkpoint={FLAGS.init_checkpoint}: ",
    )
    if unused:
        logging.info("Checkpoint variables not used by the encoder: %d", len(unused))

    try:
        written = feature_extraction.write_features(
            encoder, tokenizer, FLAGS.input_file, FLAGS.output_file, FLAGS.max_seq_length, layer_indexes,
            FLAGS.batch_size, log=_log, prefix="--", length_bucket=length_bucket,
        )
    except OSError as e:  # e.g. a full disk: nothing is left behind
        fail(f"writing --output_file={FLAGS.output_file} failed: {e.strerror or e}")
    except FloatingPointError as e:  # the model's outputs overflow: nothing is left behind either
        fail(f"--init_checkpoint={FLAGS.init_checkpoint}: {e}")
    for level, line in written.report(prefix="--"):
        _log(level, line)


def _log(level, line):
    logging.log(level, "%s", line)


if __name__ == "__main__":
    app.run(main)
