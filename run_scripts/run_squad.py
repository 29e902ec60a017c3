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
"""

import contextlib
import hashlib
import itertools
import json
import os

from absl import app, flags, logging

from bert_tf.training import distribution
from bert_tf.tasks.record import RunRecord
from run_scripts import common_flags
from run_scripts.common_flags import fail

FLAGS = flags.FLAGS

common_flags.define_run_flags(max_seq_length=384, with_eval=False)
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string(
    "predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json"
)
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text (True for uncased models).")
flags.DEFINE_integer(
    "doc_stride", 128, "When splitting up a long document into chunks, how much stride to take between chunks."
)
flags.DEFINE_integer(
    "max_query_length", 64, "The maximum number of tokens for the question. Longer questions are truncated."
)
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training to perform linear learning rate warmup for.")
flags.DEFINE_integer(
    "n_best_size", 20, "The total number of n-best predictions to generate in the nbest_predictions.json output file."
)
flags.DEFINE_integer(
    "max_answer_length", 30, "The maximum length of an answer that can be generated."
)
flags.DEFINE_bool("verbose_logging", False, "Print all warnings related to data processing.")
flags.DEFINE_bool("version_2_with_negative", False, "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float(
    "null_score_diff_threshold", 0.0, "If null_score - best_non_null is greater than the threshold predict null."
)
common_flags.define_tpu_flags()
# New flags.
common_flags.define_training_flags()
flags.DEFINE_string("tfds_name", None, "Read SQuAD through tensorflow-datasets: squad/v1.1 or squad/v2.0.")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets' data_dir (default: its own).")
flags.DEFINE_bool("tfds_download", False, "Download and prepare the --tfds_name dataset if it is not there yet.")

for _name in ("bert_config_file", "vocab_file", "output_dir"):
    flags.mark_flag_as_required(_name)

# Bumped when the features written for the same settings change: older files are rewritten.
FEATURES_VERSION = 1


def _validate_flags(config):
    """The original's validate_flags_or_throw, as one-line errors naming the flags."""
    if not FLAGS.do_train and not FLAGS.do_predict:
        fail("At least one of `do_train` or `do_predict` must be True.")
    if FLAGS.do_train and not (FLAGS.train_file or FLAGS.tfds_name):
        fail("If `do_train` is True, then `train_file` (or --tfds_name) must be specified.")
    if FLAGS.do_predict and not (FLAGS.predict_file or FLAGS.tfds_name):
        fail("If `do_predict` is True, then `predict_file` (or --tfds_name) must be specified.")
    if FLAGS.max_seq_length > config.max_position_embeddings:
        fail(
            f"Cannot use sequence length {FLAGS.max_seq_length} because the BERT model was only trained up to "
            f"sequence length {config.max_position_embeddings} (--max_seq_length vs max_position_embeddings of "
            f"--bert_config_file={FLAGS.bert_config_file})"
        )
    if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        fail(
            f"The max_seq_length ({FLAGS.max_seq_length}) must be greater than max_query_length "
            f"({FLAGS.max_query_length}) + 3"
        )
    for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
        if getattr(FLAGS, name) < 1:
            fail(f"--{name}={getattr(FLAGS, name)} must be a positive integer")
    if not 0.0 <= FLAGS.warmup_proportion <= 1.0:
        fail(f"--warmup_proportion={FLAGS.warmup_proportion} must be between 0 and 1")
    if FLAGS.doc_stride > FLAGS.max_seq_length - FLAGS.max_query_length - 3:
        logging.warning(
            "--doc_stride=%d is longer than a window's passage (max_seq_length - query - 3 = at least %d tokens): "
            "parts of long contexts fall in no window and their answers cannot be found",
            FLAGS.doc_stride, FLAGS.max_seq_length - FLAGS.max_query_length - 3,
        )
    for name in ("train_file", "predict_file"):
        path = getattr(FLAGS, name)
        if path and not FLAGS.tfds_name and not os.path.isfile(path):
            fail(f"--{name}={path}: {'is a directory, not a file' if os.path.isdir(path) else 'no such file'}")


def _task_record():
    return RunRecord(
        kind="squad", task_name="squad", version_2_with_negative=FLAGS.version_2_with_negative,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length,
    )


def _tokenizer(config):
    from bert_tf.tokenization import FullTokenizer

    try:
        tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    except (OSError, ValueError) as e:
        fail(f"--vocab_file={FLAGS.vocab_file}: {e}")
    if len(tokenizer.vocab) > config.vocab_size:
        fail(
            f"--vocab_file={FLAGS.vocab_file} has {len(tokenizer.vocab)} tokens but the model's vocab_size is "
            f"{config.vocab_size} (--bert_config_file={FLAGS.bert_config_file}): they were not made for each other"
        )
    return tokenizer


def _tfds_file(split):
    """The TFDS split as a SQuAD json file in output_dir (so one reader, the official
    evaluation and the output files all work on it as on a downloaded file)."""
    from bert_tf.tasks.squad.tfds import write_squad_json

    path = os.path.join(FLAGS.output_dir, f"{FLAGS.tfds_name.replace('/', '_')}_{split}.json")
    try:
        write_squad_json(FLAGS.tfds_name, split, path, FLAGS.tfds_data_dir, FLAGS.tfds_download)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--tfds_name={FLAGS.tfds_name}: {e}")
    return path


def _fingerprint(input_file, is_training):
    """What the features written from `input_file` depend on."""
    stat = os.stat(input_file)
    with open(FLAGS.vocab_file, "rb") as f:
        vocab = hashlib.sha256(f.read()).hexdigest()
    return {
        "features_version": FEATURES_VERSION,
        "input_file": os.path.abspath(input_file),
        "input_size": stat.st_size,
        "input_mtime_ns": stat.st_mtime_ns,
        "vocab_sha256": vocab,
        "is_training": is_training,
        **{k: v for k, v in _task_record().to_dict().items() if k not in ("task_name", "kind")},
    }


def _features(input_file, is_training, tokenizer, flag):
    """The input file's features in output_dir (train.tf_record or eval.tf_record, the
    original's names): written once, reused while the input and settings are the same.
    Returns (SquadRecords, number of examples)."""
    from bert_tf.tasks.squad import features as squad
    from bert_tf.tasks.squad.inputs import SquadRecords
    from bert_tf.io_utils import atomic_write

    path = os.path.join(FLAGS.output_dir, "train.tf_record" if is_training else "eval.tf_record")
    meta_path = path + ".json"
    fingerprint = _fingerprint(input_file, is_training)
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        if meta["fingerprint"] == fingerprint and os.path.isfile(path):
            logging.info("Reusing %s: %d features of %d examples", path, meta["features"], meta["examples"])
            return SquadRecords(path, meta["features"], FLAGS.max_seq_length, is_training), meta["examples"]
    except (OSError, ValueError, KeyError):
        pass
    stats = {}
    examples = _counted(squad.read_squad_examples(input_file, is_training, FLAGS.version_2_with_negative, stats))
    features = squad.convert_examples_to_features(
        examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length, is_training
    )
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    try:
        count = squad.write_features(features, path, is_training)
    except ValueError as e:
        fail(f"--{flag}: {e}")
    if not count:
        os.remove(path)
        fail(f"--{flag}={input_file}: no question to {'train on' if is_training else 'answer'}")
    _log_stats(input_file, stats, examples.count, count)
    with atomic_write(meta_path) as f:
        json.dump({"fingerprint": fingerprint, "features": count, "examples": examples.count, "stats": stats}, f, indent=2)
    return SquadRecords(path, count, FLAGS.max_seq_length, is_training), examples.count


class _counted:
    """An iterator that counts what passed through it."""

    def __init__(self, iterable):
        self.iterator, self.count = iter(iterable), 0

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self.iterator)
        self.count += 1
        return item


def _log_stats(input_file, stats, examples, features):
    skipped = stats.get("skipped_answer_mismatch", 0)
    logging.info(
        "%s: %d questions%s -> %d examples, %d features%s",
        input_file, stats.get("questions", examples),
        f" ({stats['impossible']} without an answer)" if stats.get("impossible") else "",
        examples, features,
        f"; {skipped} skipped: the answer text is not at its answer_start (as the original)" if skipped else "",
    )


def _by_example(input_file, tokenizer, start_logits, end_logits):
    """(example, [(feature, start_logits, end_logits), ...]) in file order, the features
    rebuilt from the file as they were written (row i of the logits is feature i): nothing
    but the logits is held in memory."""
    from bert_tf.tasks.squad import features as squad

    examples, again = itertools.tee(squad.read_squad_examples(input_file, False, FLAGS.version_2_with_negative))
    features = squad.convert_examples_to_features(
        again, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length, False
    )
    index, example, group, row = -1, None, [], -1
    for row, feature in enumerate(features):
        if row >= len(start_logits):
            break
        if feature.example_index != index:
            if group:
                yield example, group
            while index < feature.example_index:
                example, index = next(examples), index + 1
            group = []
        group.append((feature, start_logits[row], end_logits[row]))
    if row + 1 != len(start_logits):
        fail(f"--predict_file={input_file} changed while predicting: its features no longer match eval.tf_record")
    if group:
        yield example, group


def _predict(trainer, input_file, records, tokenizer):
    from bert_tf.tasks.squad.predictions import write_predictions

    logits = trainer.predict(records)
    if not trainer.is_chief:
        return None
    start, end = (logits[k][: records.count] for k in ("start_logits", "end_logits"))
    out = FLAGS.output_dir
    null_odds = os.path.join(out, "null_odds.json")
    predictions = write_predictions(
        _by_example(input_file, tokenizer, start, end),
        os.path.join(out, "predictions.json"),
        os.path.join(out, "nbest_predictions.json"),
        null_odds,
        FLAGS.n_best_size,
        FLAGS.max_answer_length,
        FLAGS.do_lower_case,
        FLAGS.version_2_with_negative,
        FLAGS.null_score_diff_threshold,
    )
    logging.info("Wrote %d predictions to %s", len(predictions), os.path.join(out, "predictions.json"))
    return predictions, (null_odds if FLAGS.version_2_with_negative else None)


def _has_answers(input_file):
    """Whether the file is a dev set (its questions carry answers or are marked unanswerable),
    or a test set (none does, or their answer lists are empty); a question without the answers
    the others have is an error."""
    from bert_tf.tasks.squad.json_reader import iter_squad_articles

    with_answers, without = 0, None
    try:
        for article in iter_squad_articles(input_file):
            for paragraph in article.get("paragraphs", ()) if isinstance(article, dict) else ():
                for qa in paragraph.get("qas", ()) if isinstance(paragraph, dict) else ():
                    if not isinstance(qa, dict):
                        continue  # the reader names what is wrong
                    if qa.get("answers") or qa.get("is_impossible"):
                        with_answers += 1
                    elif without is None:
                        without = qa.get("id")
                if with_answers and without is not None:
                    fail(
                        f"--predict_file: {input_file}: question {without!r} has no answers (and is not marked "
                        "is_impossible) while other questions have answers: a dev set needs them on every question"
                    )
    except ValueError as e:
        fail(f"--predict_file: {e}")
    return with_answers > 0


def _evaluate(trainer, input_file, predictions, null_odds_file):
    from bert_tf.tasks.squad import metrics as squad_metrics
    from bert_tf.io_utils import atomic_write

    na_probs = None
    if null_odds_file:
        with open(null_odds_file, encoding="utf-8") as f:
            na_probs = json.load(f)
    try:
        results = squad_metrics.evaluate(input_file, predictions, na_probs=na_probs)
    except ValueError as e:
        fail(str(e))
    with atomic_write(os.path.join(FLAGS.output_dir, "eval_results.json")) as f:
        f.write(json.dumps(results) + "\n")
    trainer.write_eval_results({**results, "global_step": trainer.global_step})
    logging.info("***** Eval results *****\n%s", json.dumps(results, indent=2))


def main(argv):
    del argv
    distribution.split_cpu(FLAGS.num_cpu_devices)  # before TensorFlow creates its devices
    from bert_tf import tokenization

    config = common_flags.load_bert_config(FLAGS.bert_config_file)
    _validate_flags(config)
    try:
        tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    except ValueError as e:
        fail(str(e))
    tokenizer = _tokenizer(config)
    record = _task_record()
    common_flags.check_output_dir_flag(FLAGS.output_dir)
    common_flags.check_run_output_dir(FLAGS, record, ("task_name", "version_2_with_negative"))
    if not FLAGS.do_train:
        common_flags.check_trained_model(FLAGS)

    strategy = common_flags.create_strategy(FLAGS)
    common_flags.check_batch_sizes(FLAGS, strategy.num_replicas_in_sync)
    created = not os.path.exists(FLAGS.output_dir)
    try:
        # Every input is read, checked and turned into features before any training.
        train_file = (_tfds_file("train") if FLAGS.tfds_name else FLAGS.train_file) if FLAGS.do_train else None
        predict_file = (_tfds_file("validation") if FLAGS.tfds_name else FLAGS.predict_file) if FLAGS.do_predict else None
        evaluate = FLAGS.do_predict and _has_answers(predict_file)
        train_records, num_examples = None, 0
        if FLAGS.do_train:
            train_records, num_examples = _features(train_file, True, tokenizer, "train_file")
        if FLAGS.do_predict:
            predict_records, _ = _features(predict_file, False, tokenizer, "predict_file")
    except SystemExit:
        if created and os.path.isdir(FLAGS.output_dir) and not os.listdir(FLAGS.output_dir):
            os.rmdir(FLAGS.output_dir)  # a failed start leaves nothing
        raise

    from bert_tf.tasks.squad.task import SquadTask
    from bert_tf.training.trainer import Trainer

    settings, num_train_steps = common_flags.fine_tuning_settings(FLAGS, num_examples)
    try:
        trainer = Trainer(SquadTask(config, FLAGS.max_seq_length), settings, strategy)
    except ValueError as e:
        fail(str(e))
    logging.info("SQuAD %s; strategy %s with %d replica(s)", "v2.0" if FLAGS.version_2_with_negative else "v1.1",
                 common_flags.strategy_name(FLAGS), strategy.num_replicas_in_sync)
    if FLAGS.do_train:
        logging.info(
            "***** Running training: %d examples, %d features, batch size %d, %d steps *****",
            num_examples, train_records.count, FLAGS.train_batch_size, num_train_steps,
        )
    fields = {"loss": "loss", "start_acc": "start_accuracy", "ex_per_s": "examples_per_second"}
    common_flags.train_or_restore(trainer, FLAGS, train_records, record, config, fields)

    if FLAGS.do_predict:
        logging.info("***** Running predictions: %d features *****", predict_records.count)
        written = _predict(trainer, predict_file, predict_records, tokenizer)
        if written is not None and evaluate:
            _evaluate(trainer, predict_file, *written)
        elif written is not None:
            logging.info("%s carries no answers: no evaluation", predict_file)
            for name in ("eval_results.json", "eval_results.txt"):  # another file's figures
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(FLAGS.output_dir, name))


if __name__ == "__main__":
    app.run(main)
