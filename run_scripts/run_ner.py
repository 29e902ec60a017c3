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

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.models.bert_feature_tagger import FEATURE_LAYERS, LSTM_UNITS, feature_layer_indices
from bert_tf.tasks.ner import run as ner_run
from run_scripts import common_flags
from run_scripts.common_flags import fail, library_call

FLAGS = flags.FLAGS

common_flags.define_fine_tuning_flags("The input data dir: train.txt, valid.txt and test.txt in the CoNLL-2003 layout.")
common_flags.define_tfds_flags("conll2003")
flags.DEFINE_string("labels", None, "A file of the tags, one per line (default: the tags of the training data).")
flags.DEFINE_integer(
    "window_context_words", 16,
    "A sentence longer than max_seq_length is cut into windows: how many preceding words each window "
    "after the first repeats as context (at most half its pieces; they are not tagged again).",
)
flags.DEFINE_enum(
    "feature_based", None, list(FEATURE_LAYERS),
    "The feature-based approach (paper §5.3, Table 7): freeze the encoder and train a two-layer BiLSTM and "
    "the tag layer on these layers' activations (default: fine-tune the whole model).",
)
flags.DEFINE_integer("lstm_units", LSTM_UNITS, "With --feature_based: the width of each BiLSTM direction.")
common_flags.define_padding_flags()


def _read(split, labels):
    """A split's sentences, their tags checked against `labels` (when given)."""
    f = FLAGS
    return library_call(
        lambda: ner_run.read_split(split, labels, f.data_dir, f.tfds_name, f.tfds_data_dir, f.tfds_download),
        flag_names=("data_dir",),
    )


def main(argv):
    del argv
    common_flags.run_or_search(FLAGS, _main)  # one run, or a search: the lists of --learning_rate, ...


def _main():
    f = FLAGS
    if not f.data_dir and not f.tfds_name:
        fail("--data_dir (the CoNLL files) or --tfds_name (tensorflow-datasets) is required")
    config = common_flags.check_fine_tuning_flags(FLAGS)
    length_bucket, group_by_length = common_flags.padding_settings(f)
    if f.window_context_words < 0:
        fail(f"--window_context_words={f.window_context_words} must not be negative")
    if f.lstm_units < 1:
        fail(f"--lstm_units={f.lstm_units} must be at least 1")
    if f.feature_based:
        library_call(lambda: feature_layer_indices(f.feature_based, config.num_hidden_layers), "--")
        if f.lora_rank:  # the encoder is frozen and gets no gradient: adapters on it would never train
            fail(f"--lora_rank={f.lora_rank} with --feature_based={f.feature_based}: the encoder is frozen")
    # With --labels, only that file is read: an error is its.
    tags = library_call(
        lambda: ner_run.given_tags(f.labels, f.output_dir, f.init_checkpoint, f.tfds_name, f.tfds_data_dir),
        "--labels: " if f.labels else "",
    )
    # Every input is read and checked before any training.
    train = _read("train", tags.labels if tags else None) if f.do_train else []
    if tags is None:
        if not train:
            fail("no tag set: pass --labels (a file of the tags, one per line), or the --output_dir of a trained run")
        tags = ner_run.training_tags(train)
    logging.info("Tags (%s): %s", f"--labels={f.labels}" if f.labels else tags.source, " ".join(tags.labels))
    dev = _read("dev", tags.labels) if f.do_eval else []
    test = _read("test", tags.labels) if f.do_predict else []
    record = ner_run.ner_record(
        tags.labels, f.do_lower_case, f.max_seq_length, f.window_context_words, f.feature_based, f.lstm_units,
        group_by_length,
    )
    common_flags.check_run_output_dir(FLAGS, record, ner_run.fields_to_match(f.do_train))
    library_call(
        lambda: ner_run.check_model_settings(record, f.output_dir, f.do_train, f.init_checkpoint),
        flag_names=("feature_based", "lstm_units"),
    )

    from bert_tf.training.trainer import Trainer

    strategy = common_flags.create_strategy(FLAGS)  # before TensorFlow runs an op (the tokenizer's)
    task = library_call(lambda: ner_run.build_task(config, record, f.vocab_file, length_bucket))
    features = library_call(lambda: ner_run.encode_splits(task, {"train": train, "dev": dev, "test": test}))
    # Steps count windows, the examples the model sees (as many as sentences, but for long ones).
    num_windows = len(features["train"]["sentence"]) if train else 0
    settings, num_train_steps = common_flags.fine_tuning_settings(FLAGS, num_windows, length_bucket)
    trainer = library_call(lambda: Trainer(task, settings, strategy))
    logging.info(
        "Task ner (%d tags); strategy %s with %d replica(s)",
        len(tags.labels), common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync,
    )
    if f.do_train:
        logging.info(
            "***** Running training: %d sentences (%d windows), batch size %d, %d steps *****",
            len(train), num_windows, f.train_batch_size, num_train_steps,
        )
    common_flags.train_or_restore(
        trainer, FLAGS, features.get("train"), record, config,
        {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"},
    )

    if f.do_eval:
        logging.info("***** Running evaluation: %d sentences *****", len(dev))
        common_flags.log_results(ner_run.evaluate(trainer, features["dev"]))

    if f.do_predict:
        logging.info("***** Running prediction: %d sentences *****", len(test))
        written = ner_run.predict(trainer, task, test, features["test"])
        if written:  # the chief
            logging.info("Predictions: %s", written.predictions_file)
            if written.report:
                logging.info("***** Test set (conlleval) *****\n%s", written.report.table())
    logging.info("Checkpoints and TensorBoard logs: %s", f.output_dir)


if __name__ == "__main__":
    app.run(main)
