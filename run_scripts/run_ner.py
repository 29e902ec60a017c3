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
"""

import contextlib
import os

from absl import app, flags, logging

from bert_tf.tasks import record as run_record
from bert_tf.tasks.ner import conll
from bert_tf.tasks.record import RunRecord
from run_scripts import common_flags
from run_scripts.common_flags import fail

FLAGS = flags.FLAGS

common_flags.define_fine_tuning_flags("The input data dir: train.txt, valid.txt and test.txt in the CoNLL-2003 layout.")
common_flags.define_tfds_flags("conll2003")
flags.DEFINE_string("labels", None, "A file of the tags, one per line (default: the tags of the training data).")
flags.DEFINE_integer(
    "window_context_words", 16,
    "A sentence longer than max_seq_length is cut into windows: how many preceding words each window "
    "after the first repeats as context (at most half its pieces; they are not tagged again).",
)

TASK_NAME = "ner"


def _read(split, labels):
    """A split's sentences, their tags checked against `labels` (when given)."""
    from bert_tf.data.text_files import file_exists

    try:
        if FLAGS.tfds_name:
            return conll.read_tfds_sentences(split, FLAGS.tfds_name, FLAGS.tfds_data_dir, FLAGS.tfds_download, labels)
        path = os.path.join(FLAGS.data_dir, conll.SPLIT_FILES[split])
        if not file_exists(path):
            fail(f"no {split} file {conll.SPLIT_FILES[split]!r} in --data_dir={FLAGS.data_dir} ({path} does not exist)")
        return conll.read_conll(path, labels, tagged=split != "test")
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))


def _given_labels():
    """The tag set of --labels, else of the run in --output_dir (or --init_checkpoint's folder),
    else of the TFDS dataset, with where it came from; (None, None) when the training data
    must say."""
    if FLAGS.labels:
        try:
            return conll.read_labels_file(FLAGS.labels), f"--labels={FLAGS.labels}"
        except (ValueError, FileNotFoundError) as e:
            fail(f"--labels: {e}")
    # --init_checkpoint: a run's folder, or one of its checkpoints (OUTPUT_DIR/ckpt-N).
    init = FLAGS.init_checkpoint
    for directory in (FLAGS.output_dir, init if init and os.path.isdir(init) else os.path.dirname(init or "")):
        if directory and os.path.isdir(directory):
            record = common_flags.library_call(lambda d=directory: run_record.read(d))
            if record and record.kind == "ner":
                return list(record.labels), f"the run in {directory}"
    if FLAGS.tfds_name:
        try:
            return conll.tfds_tag_names(FLAGS.tfds_name, FLAGS.tfds_data_dir), f"TFDS dataset {FLAGS.tfds_name}"
        except ValueError as e:
            fail(str(e))
    return None, None


def _predict(trainer, task, sentences, features):
    """test_predictions.txt and, when the test set is tagged, test_results.txt (conlleval's
    figures on it, as eval_results.txt's)."""
    import numpy as np

    from bert_tf.io_utils import atomic_write
    from bert_tf.tasks.ner import conlleval
    from bert_tf.tasks.ner.inputs import tags_of

    outputs = trainer.predict(features)
    if not trainer.is_chief:
        return
    rows = len(features["sentence"])  # the rest is padding
    ids = tags_of(outputs["predicted"][:rows], features["label_weights"], [len(s.words) for s in sentences])
    predicted = task.tag_names(ids)
    path = os.path.join(FLAGS.output_dir, "test_predictions.txt")
    conll.write_predictions(path, sentences, predicted)
    logging.info("Predictions: %s", path)
    if any(s.tags is None for s in sentences):
        with contextlib.suppress(FileNotFoundError):  # an earlier, tagged test set's figures
            os.remove(os.path.join(FLAGS.output_dir, "test_results.txt"))
        return
    report = conlleval.evaluate([s.tags for s in sentences], predicted)
    results = {**report.as_dict("test_"), "global_step": trainer.global_step}
    with atomic_write(os.path.join(FLAGS.output_dir, "test_results.txt")) as f:
        for key in sorted(results):
            value = results[key]
            f.write(f"{key} = {value if isinstance(value, int) else np.float32(value)}\n")
    logging.info("***** Test set (conlleval) *****\n%s", report.table())


def main(argv):
    del argv
    if not FLAGS.data_dir and not FLAGS.tfds_name:
        fail("--data_dir (the CoNLL files) or --tfds_name (tensorflow-datasets) is required")
    config = common_flags.check_fine_tuning_flags(FLAGS)
    if FLAGS.window_context_words < 0:
        fail(f"--window_context_words={FLAGS.window_context_words} must not be negative")
    labels, source = _given_labels()
    # Every input is read and checked before any training.
    train = _read("train", labels) if FLAGS.do_train else []
    if labels is None:
        if not train:
            fail("no tag set: pass --labels (a file of the tags, one per line), or the --output_dir of a trained run")
        labels, source = conll.label_list(train), "the training data"
    logging.info("Tags (%s): %s", source, " ".join(labels))
    dev = _read("dev", labels) if FLAGS.do_eval else []
    test = _read("test", labels) if FLAGS.do_predict else []
    record = RunRecord(
        kind="ner", task_name=TASK_NAME, label_kind="token", labels=labels, do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length, window_context_words=FLAGS.window_context_words,
    )
    same = ("task_name", "kind", "labels") if FLAGS.do_train else ("kind", "labels")
    common_flags.check_run_output_dir(FLAGS, record, same)

    from bert_tf.tasks.ner.task import NerTask
    from bert_tf.training.trainer import Trainer

    strategy = common_flags.create_strategy(FLAGS)  # before TensorFlow runs an op (the tokenizer's)
    try:
        task = NerTask(
            config, labels, vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
            max_seq_length=FLAGS.max_seq_length, context_words=FLAGS.window_context_words,
        )
        features = {name: task.encode(s) for name, s in (("train", train), ("dev", dev), ("test", test)) if s}
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))
    # Steps count windows, the examples the model sees (as many as sentences, but for long ones).
    num_windows = len(features["train"]["sentence"]) if train else 0
    settings, num_train_steps = common_flags.fine_tuning_settings(FLAGS, num_windows)
    try:
        trainer = Trainer(task, settings, strategy)
    except ValueError as e:
        fail(str(e))
    logging.info(
        "Task ner (%d tags); strategy %s with %d replica(s)",
        len(labels), common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync,
    )
    if FLAGS.do_train:
        logging.info(
            "***** Running training: %d sentences (%d windows), batch size %d, %d steps *****",
            len(train), num_windows, FLAGS.train_batch_size, num_train_steps,
        )
    common_flags.train_or_restore(
        trainer, FLAGS, features.get("train"), record, config,
        {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"},
    )

    if FLAGS.do_eval:
        logging.info("***** Running evaluation: %d sentences *****", len(dev))
        results = trainer.evaluate(features["dev"])
        trainer.write_eval_results(results)
        common_flags.log_results(results)

    if FLAGS.do_predict:
        logging.info("***** Running prediction: %d sentences *****", len(test))
        _predict(trainer, task, test, features["test"])
    logging.info("Checkpoints and TensorBoard logs: %s", FLAGS.output_dir)


if __name__ == "__main__":
    app.run(main)
