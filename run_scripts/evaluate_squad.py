"""The official SQuAD evaluation (evaluate-v1.1.py and evaluate-v2.0.py) in one command.

    python run_scripts/evaluate_squad.py dev-v1.1.json output_dir/predictions.json
    python run_scripts/evaluate_squad.py dev-v2.0.json output_dir/predictions.json \
      --na_prob_file=output_dir/null_odds.json

Prints the official JSON (v1.1: one line; v2.0: indented by 2), or writes it to --out_file as
evaluate-v2.0.py does. --version=auto picks the metrics from the dataset's "version" field.
Questions without a prediction are reported on stderr.
"""

import json

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.io_utils import atomic_write
from bert_tf.tasks.squad import metrics as squad_metrics
from run_scripts.flag_settings import fail

FLAGS = flags.FLAGS

flags.DEFINE_string(
    "na_prob_file", None, "SQuAD 2.0: {question id: probability of no answer} JSON (e.g. null_odds.json)."
)
flags.DEFINE_float(
    "na_prob_thresh", 1.0, 'SQuAD 2.0: predict "" where the no-answer probability exceeds this.'
)
flags.DEFINE_string("out_file", None, "Write the metrics JSON here instead of to stdout.")
flags.DEFINE_enum(
    "version", "auto", ["auto", "1.1", "2.0"], "Metrics: auto = the dataset's version (v2.0 -> 2.0, else 1.1)."
)


def _load(data_file, pred_file):
    try:
        dataset_version, articles = squad_metrics.load_dataset(data_file)
        predictions = squad_metrics.load_predictions(pred_file)
        na_probs = squad_metrics.load_na_probs(FLAGS.na_prob_file) if FLAGS.na_prob_file else None
    except (FileNotFoundError, ValueError) as e:
        fail(str(e))
    return dataset_version, articles, predictions, na_probs


def main(argv):
    if len(argv) != 3:
        fail(f"expected DATA_FILE PRED_FILE, got {len(argv) - 1} positional arguments: {argv[1:]}")
    data_file, pred_file = argv[1:]
    dataset_version, articles, predictions, na_probs = _load(data_file, pred_file)
    version = squad_metrics.resolve_version(FLAGS.version, dataset_version)
    if FLAGS.version != "auto" and squad_metrics.resolve_version("auto", dataset_version) != version:
        logging.warning("Evaluation expects v-%s, but got dataset with v-%s", version, dataset_version)

    for qid in squad_metrics.missing_predictions(articles, predictions):
        # The officials' messages (v2.0 prints its own to stdout; here both go to stderr).
        if version == "1.1":
            logging.warning("Unanswered question %s will receive score 0.", qid)
        else:
            logging.warning("Missing prediction for %s", qid)

    if version == "1.1":
        if na_probs is not None:
            fail(f"--na_prob_file={FLAGS.na_prob_file} applies to SQuAD 2.0 only (evaluating as 1.1)")
        try:
            result = squad_metrics.evaluate_v1(articles, predictions)
        except ValueError as e:
            fail(f"{data_file}: {e}")
        text = json.dumps(result)
    else:
        if na_probs is not None:
            try:
                squad_metrics.check_na_probs_cover(articles, predictions, na_probs)
            except ValueError as e:
                fail(f"--na_prob_file={FLAGS.na_prob_file}: {e}")
        try:
            result = squad_metrics.evaluate_v2(articles, predictions, na_probs, FLAGS.na_prob_thresh)
        except ValueError as e:
            fail(f"{pred_file} against {data_file}: {e}")
        text = json.dumps(result, indent=2)

    if FLAGS.out_file:
        with atomic_write(FLAGS.out_file) as writer:
            json.dump(result, writer)
        logging.info("Wrote the SQuAD %s metrics to %s", version, FLAGS.out_file)
    else:
        print(text)


if __name__ == "__main__":
    app.run(main)
