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

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.checkpoints.conversion import Settings
from run_scripts import settings_flags
from run_scripts.flag_settings import at_the_edge

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    from bert_tf.checkpoints.conversion import convert_checkpoint

    at_the_edge(lambda: convert_checkpoint(settings_flags.settings_from_flags(Settings)))


if __name__ == "__main__":
    app.run(main)
