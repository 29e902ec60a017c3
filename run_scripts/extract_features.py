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

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.extract_features import Settings
from run_scripts import settings_flags
from run_scripts.flag_settings import at_the_edge

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    from bert_tf.extract_features import extract_features

    at_the_edge(lambda: extract_features(settings_flags.settings_from_flags(Settings)))


if __name__ == "__main__":
    app.run(main)
