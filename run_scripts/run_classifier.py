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

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from run_scripts import common_flags
from run_scripts.common_flags import fail, library_call

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


def _processor(classifier_run):
    if FLAGS.task_module:
        library_call(lambda: classifier_run.import_task_module(FLAGS.task_module), "--task_module=")
    return library_call(
        lambda: classifier_run.create_processor(
            FLAGS.task_name, FLAGS.tfds_name, lambda option: f"{option} (--{option})",  # the flag of that name
            xnli_language=FLAGS.xnli_language, labels_file=FLAGS.labels_file,
        ),
        "--",
    )


def _announce(action):
    """Logs each set's start: `***** Running evaluation (mismatched): 12 examples *****`."""
    return lambda name, count: logging.info(
        "***** Running %s%s: %d examples *****", action, f" ({name})" if name else "", count
    )


def main(argv):
    del argv
    common_flags.run_or_search(FLAGS, _main)  # one run, or a search: the lists of --learning_rate, ...


def _main():
    f = FLAGS
    config = common_flags.check_fine_tuning_flags(f)
    length_bucket, group_by_length = common_flags.padding_settings(f)
    if not f.data_dir and not f.tfds_name:
        fail("--data_dir (the task's files) or --tfds_name (tensorflow-datasets) is required")
    from bert_tf.tasks.classifier import run as classifier_run

    processor = _processor(classifier_run)
    # Every input is read and checked before any training.
    splits = [split for split, wanted in (("train", f.do_train), ("dev", f.do_eval), ("test", f.do_predict)) if wanted]
    inputs = library_call(
        lambda: classifier_run.read_inputs(processor, splits, f.data_dir, f.tfds_name, f.tfds_data_dir, f.tfds_download)
    )
    record = classifier_run.classifier_record(
        processor, inputs.pair, f.do_lower_case, f.max_seq_length, group_by_length
    )
    common_flags.check_run_output_dir(f, record, classifier_run.same_fields(f.do_train))
    features = library_call(lambda: classifier_run.encode_inputs(inputs))

    from bert_tf.training.trainer import Trainer

    num_train_examples = len(inputs.train or ())
    settings, num_train_steps = common_flags.fine_tuning_settings(f, num_train_examples, length_bucket)
    strategy = common_flags.create_strategy(f)
    trainer = library_call(
        lambda: Trainer(
            classifier_run.classifier_task(config, processor, record, f.vocab_file, length_bucket), settings, strategy
        )
    )
    logging.info(
        "Task %s (%s, %d labels); strategy %s with %d replica(s)",
        record.task_name, record.label_kind, len(record.labels),
        common_flags.strategy_name(f), strategy.num_replicas_in_sync,
    )
    if f.do_train:
        logging.info("***** Running training: %d examples, batch size %d, %d steps *****",
                     num_train_examples, f.train_batch_size, num_train_steps)
    fields = {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"}
    common_flags.train_or_restore(trainer, f, features.train, record, config, fields)

    if f.do_eval:
        common_flags.log_results(classifier_run.evaluate(trainer, inputs, features, _announce("evaluation")))
    if f.do_predict:
        for results_file, submission in classifier_run.predict(trainer, inputs, features, _announce("prediction")):
            logging.info("Predictions: %s and %s", results_file, submission)
    logging.info("Checkpoints and TensorBoard logs: %s", f.output_dir)


if __name__ == "__main__":
    app.run(main)
