"""Fine-tune BERT for sentence (pair) classification: GLUE, XNLI, multi-label, your own tasks.

The original's command line runs unchanged:

    python run_scripts/run_classifier.py \
      --task_name=MRPC --do_train=true --do_eval=true --data_dir=$GLUE_DIR/MRPC \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/mrpc_output/

Outputs as the original: eval_results.txt (`key = value`) and test_results.tsv (class
probabilities per test example); also the task's GLUE submission file (e.g. MRPC.tsv). Started
again with the same command, a run resumes from the latest checkpoint in --output_dir.
--tfds_name reads the task through tensorflow-datasets instead of --data_dir; --task_module
imports a module of yours that registers more tasks (`bert_tf.tasks.classifier.processors`).

Lists in --learning_rate, --train_batch_size or --num_train_epochs, or --restarts>1, make a search
(paper A.3, `bert_tf.training.search`): a run per combination in subfolders, the best on dev as best/.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.tasks.classifier import Settings
from run_scripts import fine_tuning, settings_flags

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    fine_tuning.main(settings_flags.settings_from_flags(Settings))  # one run, or a search


if __name__ == "__main__":
    app.run(main)
