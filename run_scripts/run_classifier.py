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
"""

import os

from absl import app, flags, logging

from bert_tf.tasks.record import RunRecord
from run_scripts import common_flags
from run_scripts.common_flags import fail

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


def _import_task_module(name):
    """A module name importable from the current folder (as `python -m` would), or a .py file."""
    import importlib.util
    import sys

    try:
        if name.endswith(".py"):
            if not os.path.isfile(name):
                fail(f"--task_module={name}: no such file")
            spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(name))[0], name)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(1, os.getcwd())
            importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises, say where
        fail(f"--task_module={name}: {type(e).__name__}: {e}")


def _processor():
    from bert_tf.tasks.classifier import catalog as classifier_tasks

    if FLAGS.task_module:
        _import_task_module(FLAGS.task_module)
    name = FLAGS.task_name or (FLAGS.tfds_name and classifier_tasks.processor_for_tfds(FLAGS.tfds_name))
    if not name:
        fail(f"--task_name is required (known tasks: {', '.join(classifier_tasks.task_names())})")
    try:
        return classifier_tasks.create_processor(name, xnli_language=FLAGS.xnli_language, labels_file=FLAGS.labels_file)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--task_name={name}: {e}")


def _read(processor, split):
    from bert_tf.tasks.classifier.catalog import read_split

    try:
        return read_split(processor, split, FLAGS.data_dir, FLAGS.tfds_name, FLAGS.tfds_data_dir, FLAGS.tfds_download)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))


def _encode(examples, processor, source):
    from bert_tf.tasks.classifier.inputs import encode_examples

    try:
        return encode_examples(examples, processor.get_labels(), processor.label_kind, source)
    except ValueError as e:
        fail(str(e))


def _task_record(processor, pair):
    return RunRecord(
        kind="classifier", task_name=processor.task_name or type(processor).__name__,
        label_kind=processor.label_kind, labels=processor.get_labels(), pair=pair,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
    )


def _named(results, name):
    """An extra eval set's results under its name: eval_accuracy -> eval_mismatched_accuracy,
    loss -> mismatched_loss (global_step stays)."""
    if not name:
        return results
    renamed = {}
    for key, value in results.items():
        if key.startswith("eval_"):
            key = f"eval_{name}_{key[5:]}"
        elif key != "global_step":
            key = f"{name}_{key}"
        renamed[key] = value
    return renamed


def main(argv):
    del argv
    config = common_flags.check_fine_tuning_flags(FLAGS)
    if not FLAGS.data_dir and not FLAGS.tfds_name:
        fail("--data_dir (the task's files) or --tfds_name (tensorflow-datasets) is required")
    processor = _processor()

    # Every input is read and checked before any training.
    train, dev, test = ([], {}), ([], {}), ([], {})
    if FLAGS.do_train:
        train = _read(processor, "train")
    if FLAGS.do_eval:
        dev = _read(processor, "dev")
    if FLAGS.do_predict:
        test = _read(processor, "test")
    everything = train[0] + dev[0] + test[0] + [e for x in dev[1].values() for e in x] + [e for _, x in test[1].values() for e in x]
    pair = any(e.text_b is not None for e in everything)
    record = _task_record(processor, pair)
    # Evaluating or predicting may use any run with the same head (mnli-mm on an mnli run).
    same = ("task_name", "label_kind", "labels") if FLAGS.do_train else ("label_kind", "labels")
    common_flags.check_run_output_dir(FLAGS, record, same)
    train_features = _encode(train[0], processor, "train") if FLAGS.do_train else None
    dev_sets = {"": dev[0], **dev[1]} if FLAGS.do_eval else {}
    dev_features = {name: _encode(examples, processor, f"dev {name}".strip()) for name, examples in dev_sets.items()}
    test_sets = {"": (processor.submission_name, test[0]), **test[1]} if FLAGS.do_predict else {}
    test_features = {name: _encode(examples, processor, f"test {name}".strip()) for name, (_, examples) in test_sets.items()}

    from bert_tf.tasks.classifier.task import METRIC_FOR_GLUE_TASK, ClassifierTask, write_submission, write_test_results
    from bert_tf.training.trainer import Trainer

    settings, num_train_steps = common_flags.fine_tuning_settings(FLAGS, len(train[0]))
    strategy = common_flags.create_strategy(FLAGS)
    try:
        task = ClassifierTask(
            config,
            processor.get_labels(),
            processor.label_kind,
            vocab_file=FLAGS.vocab_file,
            do_lower_case=FLAGS.do_lower_case,
            max_seq_length=FLAGS.max_seq_length,
            pair=pair,
            extra_metrics=getattr(processor, "metrics", None) or METRIC_FOR_GLUE_TASK.get(processor.submission_name, ()),
        )
        trainer = Trainer(task, settings, strategy)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))
    logging.info(
        "Task %s (%s, %d labels); strategy %s with %d replica(s)",
        record.task_name, processor.label_kind, len(record.labels),
        common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync,
    )
    if FLAGS.do_train:
        logging.info("***** Running training: %d examples, batch size %d, %d steps *****", len(train[0]), FLAGS.train_batch_size, num_train_steps)
    fields = {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"}
    common_flags.train_or_restore(trainer, FLAGS, train_features, record, config, fields)

    if FLAGS.do_eval:
        results = {}
        for name, features in dev_features.items():
            logging.info("***** Running evaluation%s: %d examples *****", f" ({name})" if name else "", len(dev_sets[name]))
            part = trainer.evaluate(features)
            results.update(_named(part, name))
        trainer.write_eval_results(results)
        common_flags.log_results(results)

    if FLAGS.do_predict:
        for name, (stem, examples) in test_sets.items():
            logging.info("***** Running prediction%s: %d examples *****", f" ({name})" if name else "", len(examples))
            predictions = trainer.predict(test_features[name])
            if not trainer.is_chief:
                continue
            suffix = f"_{name}" if name else ""
            write_test_results(os.path.join(FLAGS.output_dir, f"test_results{suffix}.tsv"), predictions, len(examples))
            submission = os.path.join(FLAGS.output_dir, f"{stem}.tsv" if stem else f"test_predictions{suffix}.tsv")
            write_submission(submission, examples, predictions, processor.get_labels(), processor.label_kind)
            logging.info("Predictions: %s and %s", os.path.join(FLAGS.output_dir, f"test_results{suffix}.tsv"), submission)
    logging.info("Checkpoints and TensorBoard logs: %s", FLAGS.output_dir)


if __name__ == "__main__":
    app.run(main)
