"""Fine-tune BERT for question answering (SQuAD v1.1 and v2.0) and write its answers.

The original's command line runs unchanged:

    python run_scripts/run_squad.py \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True --train_file=$SQUAD_DIR/train-v1.1.json \
      --do_predict=True --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

Outputs as the original: train.tf_record / eval.tf_record (the features), predictions.json,
nbest_predictions.json and, with --version_2_with_negative, null_odds.json. When the predict
file carries answers (a dev set), the official evaluation runs too: eval_results.json (the
official script's JSON) and eval_results.txt. Started again with the same command, a run
resumes from the latest checkpoint in --output_dir (and reuses the features it wrote).
--tfds_name=squad/v1.1 or squad/v2.0 reads SQuAD through tensorflow-datasets instead of files.

Lists in --learning_rate, --train_batch_size, --num_train_epochs or --restarts>1 make a search (paper A.3,
`bert_tf.training.search`): a run per combination in subfolders, judged by F1 on --predict_file; best/.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.tasks.squad import Settings
from run_scripts import fine_tuning, settings_flags

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    fine_tuning.main(settings_flags.settings_from_flags(Settings))  # one run, or a search


if __name__ == "__main__":
    app.run(main)
