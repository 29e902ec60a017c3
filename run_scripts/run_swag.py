"""Fine-tune BERT for SWAG (paper §4.4): pick the ending of a sentence among four.

    python run_scripts/run_swag.py \
      --do_train=true --do_eval=true --data_dir=$SWAG_DIR \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --train_batch_size=16 --learning_rate=2e-5 --num_train_epochs=3.0 --output_dir=/tmp/swag_output/

--data_dir holds train.csv, val.csv and test.csv of the SWAG release (`bert_tf.tasks.swag.reader`). Each
example becomes four sequences, `[CLS] sent1 [SEP] sent2 ending_i [SEP]`; one vector scores each,
a softmax over the four. Outputs: eval_results.txt (eval_accuracy, eval_loss, global_step, loss)
and, with --do_predict, test_results.tsv (the four endings' probabilities per test example,
tab-separated, no header, as run_classifier's) and test_predictions.tsv (`index`, the predicted
ending). Started again with the same command, a run resumes from the latest checkpoint in
--output_dir.

Lists in --learning_rate, --train_batch_size or --num_train_epochs, or --restarts>1, make a search
(paper A.3, `bert_tf.training.search`): a run per combination in subfolders, the best on dev as best/.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.tasks.swag import Settings
from run_scripts import fine_tuning, settings_flags

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    fine_tuning.main(settings_flags.settings_from_flags(Settings))  # one run, or a search


if __name__ == "__main__":
    app.run(main)
