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

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.tasks.swag import run as swag_run
from bert_tf.tasks.swag.reader import encode_examples
from run_scripts import common_flags
from run_scripts.common_flags import fail, library_call

FLAGS = flags.FLAGS

common_flags.define_fine_tuning_flags("The input data dir: train.csv, val.csv and test.csv of the SWAG release.")
common_flags.define_padding_flags()


def _read(split):
    return library_call(lambda: swag_run.read_split(FLAGS.data_dir, split), flag_names=("data_dir",))


def main(argv):
    del argv
    common_flags.run_or_search(FLAGS, _main)  # one run, or a search: the lists of --learning_rate, ...


def _main():
    f = FLAGS
    if not f.data_dir:
        fail("--data_dir (the SWAG CSV files) is required")
    config = common_flags.check_fine_tuning_flags(FLAGS)
    length_bucket, group_by_length = common_flags.padding_settings(f)
    # Every input is read and checked before any training.
    train = _read("train") if f.do_train else []
    dev = _read("dev") if f.do_eval else []
    test = _read("test") if f.do_predict else []
    record = swag_run.swag_record(f.do_lower_case, f.max_seq_length, group_by_length)
    common_flags.check_run_output_dir(FLAGS, record, swag_run.fields_to_match(f.do_train))

    from bert_tf.training.trainer import Trainer

    settings, num_train_steps = common_flags.fine_tuning_settings(FLAGS, len(train), length_bucket)
    strategy = common_flags.create_strategy(FLAGS)
    task = library_call(lambda: swag_run.build_task(config, record, f.vocab_file, length_bucket))
    trainer = library_call(lambda: Trainer(task, settings, strategy))
    logging.info("Task swag (%d choices); strategy %s with %d replica(s)", record.num_choices,
                 common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync)
    if f.do_train:
        logging.info("***** Running training: %d examples, batch size %d, %d steps *****", len(train),
                     f.train_batch_size, num_train_steps)
    common_flags.train_or_restore(
        trainer, FLAGS, encode_examples(train) if train else None, record, config,
        {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"},
    )

    if f.do_eval:
        logging.info("***** Running evaluation: %d examples *****", len(dev))
        common_flags.log_results(swag_run.evaluate(trainer, dev))

    if f.do_predict:
        logging.info("***** Running prediction: %d examples *****", len(test))
        written = swag_run.predict(trainer, task, test)
        if written:  # the chief
            logging.info("Predictions: %s and %s", written.results_file, written.submission_file)
    logging.info("Checkpoints and TensorBoard logs: %s", f.output_dir)


if __name__ == "__main__":
    app.run(main)
