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
from run_scripts import common_flags, fine_tuning

FLAGS = flags.FLAGS

common_flags.define_fine_tuning_flags(
    "The input data dir. Should contain the .tsv files (or other data files) for the task."
)
flags.DEFINE_string("task_name", None, "The name of the task to train.")
# New flags.
common_flags.define_tfds_flags("glue/mrpc, xnli")
flags.DEFINE_string("xnli_language", "zh", "xnli: the language trained and evaluated on.")
flags.DEFINE_string("labels_file", None, "multilabel: the label names, one per line.")
flags.DEFINE_string("task_module", None, "A Python module to import first; it registers more tasks.")
common_flags.define_padding_flags()


def main(argv):
    del argv
    fine_tuning.main(FLAGS, "classifier")  # one run, or a search: the lists of --learning_rate, ...


if __name__ == "__main__":
    app.run(main)
