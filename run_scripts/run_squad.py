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
from run_scripts import common_flags, fine_tuning

FLAGS = flags.FLAGS

common_flags.define_run_flags(max_seq_length=384, with_eval=False, search=True)
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text (True for uncased models).")
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to take between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Longer questions are truncated.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
common_flags.define_epoch_flags()
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30, "The maximum length of an answer that can be generated.")
flags.DEFINE_bool("verbose_logging", False, "Print all warnings related to data processing.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "If null_score - best_non_null is greater than the threshold predict null.")
common_flags.define_tpu_flags()
# New flags.
common_flags.define_training_flags()
common_flags.define_lora_flags()
common_flags.define_search_flags()
flags.DEFINE_string("tfds_name", None, "Read SQuAD through tensorflow-datasets: squad/v1.1 or squad/v2.0.")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets' data_dir (default: its own).")
flags.DEFINE_bool("tfds_download", False, "Download and prepare the --tfds_name dataset if it is not there yet.")

flags.mark_flag_as_required("output_dir")
common_flags.define_padding_flags()
common_flags.require_unless_hf_folder(("bert_config_file", "vocab_file"))  # a Hugging Face --init_checkpoint has both


def main(argv):
    del argv
    fine_tuning.main(FLAGS, "squad")  # one run, or a search: the lists of --learning_rate, ...


if __name__ == "__main__":
    app.run(main)
