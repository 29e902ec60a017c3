"""Fine-tune BERT for named-entity recognition (paper §5.3): CoNLL-2003 or any CoNLL-layout data.

    python run_scripts/run_ner.py \
      --do_train=true --do_eval=true --do_predict=true --data_dir=$CONLL_DIR \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_lower_case=false --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=5e-5 --num_train_epochs=3.0 --output_dir=/tmp/ner_output/

--data_dir holds train.txt, valid.txt and test.txt (`bert_tf.tasks.ner.conll`); --tfds_name=conll2003
reads them through tensorflow-datasets instead. The tags are --labels' (a file, one per line),
else those of the run in --output_dir, else those of the training data. Each word's tag is
predicted on its first WordPiece; sentences longer than --max_seq_length are cut into windows
that tag every word once. Outputs: eval_results.txt (conlleval's entity-level precision, recall
and F1, overall and per type, and word accuracy) and, with --do_predict, test_predictions.txt
(`word gold predicted` per line, a blank line after each sentence, conlleval's input) and, when
the test set is tagged, test_results.txt with its figures. Started again with the same command,
a run resumes from the latest checkpoint in --output_dir.

--feature_based=LAYERS (paper §5.3, Table 7) freezes the encoder and trains a two-layer BiLSTM
(--lstm_units per direction) and the tag layer on LAYERS' activations, with the same outputs.

Lists in --learning_rate, --train_batch_size or --num_train_epochs, or --restarts>1, make a search
(paper A.3, `bert_tf.training.search`): a run per combination in subfolders, the best on dev as best/.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.tasks.ner import Settings
from run_scripts import fine_tuning, settings_flags

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    fine_tuning.main(settings_flags.settings_from_flags(Settings))  # one run, or a search


if __name__ == "__main__":
    app.run(main)
