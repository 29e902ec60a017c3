"""Pre-train BERT on TFRecords from create_pretraining_data.py (the original's flags, and more).

    python run_scripts/run_pretraining.py \
      --input_file=out/train-*.tfrecord --output_dir=pretraining_output \
      --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
      --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
      --num_warmup_steps=10 --learning_rate=2e-5

A command line written for the original runs unchanged; --next_sentence_prediction=false trains
the masked LM alone on the same records (the paper's "No NSP"). Started again with the same
command, a run resumes from the latest checkpoint in --output_dir (same step, optimizer state,
schedule, data position and dropout seeds: it ends as an uninterrupted run does); a run whose
num_train_steps is reached only evaluates. Bad flags, paths and files are one-line errors before
training (the first record of every train and eval file is checked: a TFRecord at all, the
flags' lengths, ids below vocab_size); a record found damaged later, or a full disk, is one line
naming the file.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.training.pretrain import Settings
from run_scripts import settings_flags
from run_scripts.flag_settings import at_the_edge

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    from bert_tf.training.pretrain import pretrain

    at_the_edge(lambda: pretrain(settings_flags.settings_from_flags(Settings)))


if __name__ == "__main__":
    app.run(main)
