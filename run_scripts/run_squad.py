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

import json
import os

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from run_scripts import common_flags
from run_scripts.common_flags import fail, library_call

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


def _validate_flags():
    """The original's validate_flags_or_throw and the checks of every fine-tuning script, as
    one-line errors naming the flags; returns the BertConfig."""
    # Before check_fine_tuning_flags: a missing input is named before a missing model.
    if FLAGS.do_train and not (FLAGS.train_file or FLAGS.tfds_name):
        fail("If `do_train` is True, then `train_file` (or --tfds_name) must be specified.")
    if FLAGS.do_predict and not (FLAGS.predict_file or FLAGS.tfds_name):
        fail("If `do_predict` is True, then `predict_file` (or --tfds_name) must be specified.")
    config = common_flags.check_fine_tuning_flags(FLAGS, actions=("do_train", "do_predict"))
    if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        fail(f"The max_seq_length ({FLAGS.max_seq_length}) must be greater than max_query_length "
             f"({FLAGS.max_query_length}) + 3")
    for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
        if getattr(FLAGS, name) < 1:
            fail(f"--{name}={getattr(FLAGS, name)} must be a positive integer")
    if FLAGS.doc_stride > (passage := FLAGS.max_seq_length - FLAGS.max_query_length - 3):
        logging.warning("--doc_stride=%d is longer than a window's passage (max_seq_length - query - 3 = at least %d "
                        "tokens): parts of long contexts fall in no window and their answers cannot be found",
                        FLAGS.doc_stride, passage)
    for name in ("train_file", "predict_file"):
        path = getattr(FLAGS, name)
        if path and not FLAGS.tfds_name and not os.path.isfile(path):
            fail(f"--{name}={path}: {'is a directory, not a file' if os.path.isdir(path) else 'no such file'}")
    return config


def main(argv):
    del argv
    common_flags.run_or_search(FLAGS, _main, evaluation="do_predict")  # a search's runs evaluate by predicting


def _main():
    config = _validate_flags()
    length_bucket, group_by_length = common_flags.padding_settings(FLAGS)
    from bert_tf.checkpoints import sources
    from bert_tf.tasks.squad import run as squad_run
    from bert_tf.tasks.squad.task import SquadTask
    from bert_tf.training.trainer import Trainer

    tokenizer = library_call(lambda: squad_run.load_tokenizer(FLAGS.vocab_file, FLAGS.do_lower_case), "--")
    library_call(lambda: config.check_vocab_size(len(tokenizer.vocab), FLAGS.vocab_file),
                 f"--vocab_file vs --{sources.config_setting(FLAGS.bert_config_file, FLAGS.init_checkpoint)}: ")
    record = squad_run.squad_record(FLAGS.version_2_with_negative, FLAGS.do_lower_case, FLAGS.max_seq_length,
                                    FLAGS.doc_stride, FLAGS.max_query_length, group_by_length)
    common_flags.check_run_output_dir(FLAGS, record, squad_run.fields_to_match(FLAGS.do_train))
    strategy = common_flags.create_strategy(FLAGS)
    common_flags.check_batch_sizes(FLAGS, strategy.num_replicas_in_sync)
    files = squad_run.InputFiles(FLAGS.train_file, FLAGS.predict_file, FLAGS.tfds_name, FLAGS.tfds_data_dir,
                                 FLAGS.tfds_download)
    inputs = library_call(lambda: squad_run.read_inputs(  # every input read before any training
        files, FLAGS.do_train, FLAGS.do_predict, tokenizer, FLAGS.vocab_file, record, FLAGS.output_dir,
        on_features=lambda cached: logging.info("%s", cached.summary())), "--")
    train = inputs.train
    # Its loss's softmax runs over the padding positions too (the original's): skipping changes their logits.
    settings, num_train_steps = common_flags.fine_tuning_settings(
        FLAGS, train.examples if train else 0, length_bucket, loss_reads_padding=True)
    task = SquadTask(config, FLAGS.max_seq_length, length_bucket, group_by_length)
    trainer = library_call(lambda: Trainer(task, settings, strategy))
    logging.info("SQuAD %s; strategy %s with %d replica(s)", "v2.0" if FLAGS.version_2_with_negative else "v1.1",
                 common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync)
    if FLAGS.do_train:
        logging.info("***** Running training: %d examples, %d features, batch size %d, %d steps *****",
                     train.examples, train.records.count, FLAGS.train_batch_size, num_train_steps)
    fields = {"loss": "loss", "start_acc": "start_accuracy", "ex_per_s": "examples_per_second"}
    common_flags.train_or_restore(trainer, FLAGS, train.records if train else None, record, config, fields)

    if FLAGS.do_predict:
        logging.info("***** Running predictions: %d features *****", inputs.predict.records.count)
        answers = squad_run.AnswerSettings(FLAGS.n_best_size, FLAGS.max_answer_length, FLAGS.null_score_diff_threshold)
        done = library_call(lambda: squad_run.predict_and_evaluate(trainer, inputs, tokenizer, record, answers),
                            "--predict_file=")  # every error starts with a file
        if done is None:  # not the chief: it writes nothing
            return
        written, results = done
        logging.info("Wrote %d predictions to %s", len(written.predictions),
                     os.path.join(FLAGS.output_dir, squad_run.PREDICTIONS_FILE))
        if results is None:
            logging.info("%s carries no answers: no evaluation", inputs.predict_file)
        else:
            logging.info("***** Eval results *****\n%s", json.dumps(results, indent=2))


if __name__ == "__main__":
    app.run(main)
