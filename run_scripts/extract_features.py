"""Extract pre-computed per-token feature vectors from BERT (the original's script and flags).

    python run_scripts/extract_features.py \
      --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

One JSON line per input line (`A` or `A ||| B`), as the original writes it. `--init_checkpoint`
takes Google's original checkpoints and this package's `.keras` files. Bad paths and flags are
errors before any work; the output is written under a temporary name and renamed when complete
(a failed write, a full disk included, leaves nothing); invalid UTF-8 in the input is replaced,
with a warning.
"""

import contextlib
import os
import time

from absl import app, flags, logging

from bert_tf import checkpoints, feature_extraction, tokenization
from bert_tf.io_utils import atomic_write, check_distinct_outputs, check_keras_file, check_output_file
from bert_tf.models import BertEncoder
from run_scripts import common_flags
from run_scripts.common_flags import fail, load_bert_config

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Text file: one example per line, `A` or `A ||| B`.")
flags.DEFINE_string("output_file", None, "Where to write the JSON lines.")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "Comma-separated layer indexes (-1 = last layer).")
flags.DEFINE_string(
    "bert_config_file",
    None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.",
)
flags.DEFINE_integer(
    "max_seq_length",
    128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded.",
)
flags.DEFINE_string(
    "init_checkpoint", None, "Initial checkpoint (usually from a pre-trained BERT model)."
)
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case",
    True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.",
)
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool(
    "use_one_hot_embeddings",
    False,
    "Accepted for compatibility with the original; embedding lookups here are gathers on "
    "every device, so it changes nothing.",
)
common_flags.define_tpu_flags()

for _name in ("input_file", "vocab_file", "bert_config_file", "init_checkpoint", "output_file"):
    flags.mark_flag_as_required(_name)


def _check_inputs(config, tokenizer):
    """Every check that can fail, before any model is built or any output written."""
    common_flags.library_call(
        lambda: config.check_seq_length(FLAGS.max_seq_length),
        f"--max_seq_length={FLAGS.max_seq_length} vs max_position_embeddings of "
        f"--bert_config_file={FLAGS.bert_config_file}: ",
    )
    if FLAGS.max_seq_length < 3:
        fail(
            f"--max_seq_length={FLAGS.max_seq_length} leaves no room for [CLS] A [SEP] B [SEP]"
        )
    if FLAGS.batch_size < 1:
        fail(f"--batch_size={FLAGS.batch_size} must be positive")
    common_flags.library_call(
        lambda: config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file),
        f"--vocab_file vs --bert_config_file={FLAGS.bert_config_file}: ",
    )
    missing = [t for t in ("[CLS]", "[SEP]", "[UNK]") if t not in tokenizer.vocab]
    if missing:
        fail(f"--vocab_file={FLAGS.vocab_file} lacks {', '.join(missing)}")
    if os.path.isdir(FLAGS.input_file):
        fail(f"--input_file={FLAGS.input_file} is a directory, not a file")
    if not os.path.isfile(FLAGS.input_file):
        fail(f"--input_file={FLAGS.input_file} does not exist")
    try:
        check_output_file(FLAGS.output_file)
        inputs = ("input_file", "vocab_file", "bert_config_file")
        check_distinct_outputs([FLAGS.output_file], [(flag, FLAGS[flag].value) for flag in inputs])
        check_keras_file(FLAGS.init_checkpoint, "init_checkpoint")
    except ValueError as e:
        fail(str(e))


def main(argv):
    del argv
    try:
        tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    except ValueError as e:
        fail(str(e))
    config = load_bert_config(FLAGS.bert_config_file)
    if os.path.isdir(FLAGS.vocab_file):
        fail(f"--vocab_file={FLAGS.vocab_file} is a directory, not a file")
    try:
        tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--vocab_file: {e}")
    _check_inputs(config, tokenizer)
    try:
        layer_indexes = feature_extraction.parse_layer_indexes(FLAGS.layers, config.num_hidden_layers)
    except ValueError as e:
        fail(f"--layers: {e}")

    scope = common_flags.tpu_strategy(FLAGS).scope() if FLAGS.use_tpu else contextlib.nullcontext()
    with scope:
        encoder = BertEncoder.from_bert_config(config)
    try:
        report = checkpoints.restore(encoder, FLAGS.init_checkpoint)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--init_checkpoint={FLAGS.init_checkpoint}: {e}")
    if report is not None and report.unused:
        logging.info("Checkpoint variables not used by the encoder: %d", len(report.unused))

    start, count = time.time(), 0
    invalid = {"lines": 0, "bytes": 0}  # with invalid UTF-8

    def on_invalid_utf8(unique_id, replaced):
        if not invalid["lines"]:
            logging.warning(
                "--input_file=%s: line %d is not valid UTF-8 (binary input, another encoding?); "
                "its invalid bytes are replaced and then dropped by the tokenizer",
                FLAGS.input_file,
                unique_id + 1,
            )
        invalid["lines"] += 1
        invalid["bytes"] += replaced

    examples = feature_extraction.read_examples(FLAGS.input_file, on_invalid_utf8)
    results = feature_extraction.extract_features(
        encoder, tokenizer, examples, FLAGS.max_seq_length, layer_indexes, FLAGS.batch_size
    )
    try:
        with atomic_write(FLAGS.output_file) as writer:
            for example, tokens, layers in results:
                if example.unique_id < 5:
                    logging.info("unique_id: %d tokens: %s", example.unique_id, " ".join(tokens))
                writer.write(feature_extraction.feature_json_line(example.unique_id, tokens, layers))
                count += 1
                if count % 1000 == 0:
                    logging.info("%d lines, %.1f lines/s", count, count / (time.time() - start))
    except OSError as e:  # e.g. a full disk: atomic_write has removed the partial file
        fail(f"writing --output_file={FLAGS.output_file} failed: {e.strerror or e}")
    if invalid["lines"]:
        logging.warning(
            "Replaced %d invalid UTF-8 byte(s) in %d line(s) of --input_file", invalid["bytes"], invalid["lines"]
        )
    logging.info(
        "Wrote %d lines to %s in %.1f s", count, FLAGS.output_file, time.time() - start
    )


if __name__ == "__main__":
    app.run(main)
