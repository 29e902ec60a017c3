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
"""

import os

from absl import app, flags, logging

from bert_tf.tasks.record import RunRecord
from run_scripts import common_flags
from run_scripts.common_flags import fail

FLAGS = flags.FLAGS

common_flags.define_fine_tuning_flags("The input data dir: train.csv, val.csv and test.csv of the SWAG release.")

TASK_NAME = "swag"


def _read(split):
    from bert_tf.data.text_files import file_exists
    from bert_tf.tasks.swag import reader as swag

    path = os.path.join(FLAGS.data_dir, swag.SPLIT_FILES[split])
    if not file_exists(path):
        fail(f"no {split} file {swag.SPLIT_FILES[split]!r} in --data_dir={FLAGS.data_dir} ({path} does not exist)")
    try:
        return swag.read_swag(path, split, labelled=split != "test")
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))


def main(argv):
    del argv
    if not FLAGS.data_dir:
        fail("--data_dir (the SWAG CSV files) is required")
    config = common_flags.check_fine_tuning_flags(FLAGS)
    from bert_tf.tasks.swag.reader import NUM_CHOICES, encode_examples

    # Every input is read and checked before any training.
    train = _read("train") if FLAGS.do_train else []
    dev = _read("dev") if FLAGS.do_eval else []
    test = _read("test") if FLAGS.do_predict else []
    record = RunRecord(
        kind="swag", task_name=TASK_NAME, num_choices=NUM_CHOICES, do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
    )
    same = ("task_name", "kind", "num_choices") if FLAGS.do_train else ("kind", "num_choices")
    common_flags.check_run_output_dir(FLAGS, record, same)

    from bert_tf.tasks.classifier.task import write_submission, write_test_results
    from bert_tf.tasks.swag.task import SwagTask
    from bert_tf.training.trainer import Trainer

    settings, num_train_steps = common_flags.fine_tuning_settings(FLAGS, len(train))
    strategy = common_flags.create_strategy(FLAGS)
    try:
        task = SwagTask(
            config, NUM_CHOICES, vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
            max_seq_length=FLAGS.max_seq_length,
        )
        trainer = Trainer(task, settings, strategy)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))
    logging.info("Task swag (%d choices); strategy %s with %d replica(s)", NUM_CHOICES,
                 common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync)
    if FLAGS.do_train:
        logging.info("***** Running training: %d examples, batch size %d, %d steps *****", len(train),
                     FLAGS.train_batch_size, num_train_steps)
    common_flags.train_or_restore(
        trainer, FLAGS, encode_examples(train) if train else None, record, config,
        {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"},
    )

    if FLAGS.do_eval:
        logging.info("***** Running evaluation: %d examples *****", len(dev))
        results = trainer.evaluate(encode_examples(dev))
        trainer.write_eval_results(results)
        common_flags.log_results(results)

    if FLAGS.do_predict:
        logging.info("***** Running prediction: %d examples *****", len(test))
        predictions = trainer.predict(encode_examples(test))
        if trainer.is_chief:
            results, submission = (os.path.join(FLAGS.output_dir, n) for n in ("test_results.tsv", "test_predictions.tsv"))
            write_test_results(results, predictions, len(test))
            write_submission(submission, test, predictions, task.labels, "single")
            logging.info("Predictions: %s and %s", results, submission)
    logging.info("Checkpoints and TensorBoard logs: %s", FLAGS.output_dir)


if __name__ == "__main__":
    app.run(main)
