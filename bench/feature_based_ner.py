"""Table 7 at small scale: run_ner's feature-based rows beside fine-tuning, on a BERT pre-trained
on the embedded corpus and a synthetic NER set made from it.

    python bench/feature_based_ner.py [--output_dir=/tmp/bert_tf_table7 --pretraining_steps=1500
                                       --seeds=3 --lstm_units=64]
    python bench/feature_based_ner.py --smoke   # no pre-training, tiny sets, one row: that it still runs

1. Pre-trains a 4-layer, hidden-64 BERT (data/bert_config_tiny.json with 4 layers, so that the
   last-four rows exist) on data/corpus.txt, as the quickstart does.
2. Writes train/valid/test.txt in CoNLL's layout: each sentence is one of the corpus's, with a
   phrase inserted at a random word boundary that names an entity: "right next to the W" (LOC),
   "together with the W" (PER) or "on behalf of the W" (ORG), W a made-up name (two or three
   syllables, several WordPieces) drawn from one pool for all three types. A name says that it is
   an entity, as a capitalised word would; only the phrase before it says which type, so the
   tagger must read context.
3. Runs run_ner.py for fine-tuning and each --feature_based row, each with --seeds seeds
   (--random_seed), and prints dev and test entity F1 (mean and range over the seeds) and the
   time per run.

The figures are a check that the rows work and learn, not the paper's: a tiny model, synthetic
entities, one hyper-parameter setting per approach (`FINE_TUNING`, `FEATURE_BASED`).
"""

import os
import random
import re
import statistics
import subprocess
import sys
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
ROWS = ("embeddings", "second_to_last", "last", "weighted_sum_last_four", "concat_last_four", "weighted_sum_all")
CUES = {"LOC": "right next to the", "PER": "together with the", "ORG": "on behalf of the"}
SPLITS = {"train": 600, "valid": 150, "test": 150}
FINE_TUNING = {"learning_rate": "2e-4", "num_train_epochs": "20"}
FEATURE_BASED = {"learning_rate": "3e-3", "num_train_epochs": "20"}

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "/tmp/bert_tf_table7", "Where to write everything.")
flags.DEFINE_integer("pretraining_steps", 1500, "Pre-training steps (as the quickstart's).")
flags.DEFINE_integer("seeds", 3, "Runs per row, with --random_seed 1, 2, ...")
flags.DEFINE_integer("lstm_units", 64, "The BiLSTM's width per direction (the model's hidden size).")
flags.DEFINE_list("rows", ["fine_tuning", *ROWS], "Rows to run: fine_tuning and --feature_based values.")
flags.DEFINE_boolean("smoke", False, "No pre-training (random weights), tiny sets, one epoch, one row, one seed.")

# The feature-based row: fine-tuning's differs in its settings only (FINE_TUNING, no LSTM flags).
SMOKE = {"pretraining_steps": 0, "seeds": 1, "rows": ["weighted_sum_last_four"]}
SMOKE_SPLITS, SMOKE_EPOCHS = {"train": 32, "valid": 8, "test": 8}, "1"


def _run(script, *args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO}  # bert_tf from this checkout
    result = subprocess.run([sys.executable, os.path.join(REPO, "run_scripts", script), *args, "--noprogress"],
                            capture_output=True, text=True, env=env, cwd=REPO)
    if result.returncode:
        sys.exit(f"{script} failed:\n{result.stderr[-3000:]}")


def pretrain(out):
    """The pre-trained model's folder (bert_config.json and its checkpoints; only the config with
    --pretraining_steps=0)."""
    with open(os.path.join(DATA, "bert_config_tiny.json"), encoding="utf-8") as f:
        config = re.sub(r'"num_hidden_layers": \d+', '"num_hidden_layers": 4', f.read())
    model_dir = os.path.join(out, "pretraining_output")
    os.makedirs(model_dir, exist_ok=True)
    with open(os.path.join(model_dir, "bert_config.json"), "w", encoding="utf-8") as f:
        f.write(config)
    if not FLAGS.pretraining_steps:
        return model_dir
    records = os.path.join(out, "train.tfrecord")
    _run("create_pretraining_data.py", f"--input_file={DATA}/corpus.txt", f"--output_file={records}",
         f"--vocab_file={DATA}/vocab.txt", "--do_lower_case=True", "--max_seq_length=64",
         "--max_predictions_per_seq=10", "--dupe_factor=20")
    steps = FLAGS.pretraining_steps
    _run("run_pretraining.py", f"--input_file={records}", f"--output_dir={model_dir}", "--do_train=True",
         f"--bert_config_file={model_dir}/bert_config.json", "--train_batch_size=32", "--max_seq_length=64",
         "--max_predictions_per_seq=10", f"--num_train_steps={steps}", f"--num_warmup_steps={steps // 10}",
         "--learning_rate=1e-3", f"--save_checkpoints_steps={steps}", "--steps_per_execution=20")
    return model_dir


def corpus_sentences():
    """The corpus's sentences as lists of lower-cased words, punctuation split off."""
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        return [re.findall(r"[a-z']+|[^\sa-z']", line.lower()) for line in f if line.strip()]


def write_ner_set(directory, splits, seed=0):
    """train/valid/test.txt (see the module docstring) in `directory`, of `splits[name]` sentences."""
    rng = random.Random(seed)
    sentences = corpus_sentences()
    corpus_words = {w for s in sentences for w in s}
    # Names made up of syllables (never a word of the corpus): one pool for the three types.
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    pool = sorted({"".join(rng.sample(syllables, rng.randint(2, 3))) for _ in range(300)} - corpus_words)
    os.makedirs(directory, exist_ok=True)
    for split, n in splits.items():
        lines = ["-DOCSTART- -X- -X- O", ""]
        for _ in range(n):
            words = list(rng.choice(sentences))
            kind = rng.choice(sorted(CUES))
            at = rng.randint(0, len(words) - 1)  # before the final punctuation
            phrase = CUES[kind].split()
            words[at:at] = [*phrase, rng.choice(pool)]
            tags = ["O"] * (at + len(phrase)) + [f"B-{kind}"] + ["O"] * (len(words) - at - len(phrase) - 1)
            lines += [f"{w} X X {t}" for w, t in zip(words, tags, strict=True)] + [""]
        with open(os.path.join(directory, f"{split}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def fine_tune(model_dir, data_dir, out, seed, row=None, epochs=None):
    """One run_ner run (from the pre-trained weights where there are any); returns (dev F1, test
    F1, seconds)."""
    settings = FINE_TUNING if row is None else {**FEATURE_BASED, "feature_based": row,
                                                "lstm_units": str(FLAGS.lstm_units)}
    settings = {**settings, "num_train_epochs": epochs} if epochs else settings
    if FLAGS.pretraining_steps:
        settings = {**settings, "init_checkpoint": model_dir}
    start = time.time()
    _run("run_ner.py", "--do_train=True", "--do_eval=True", "--do_predict=True", f"--data_dir={data_dir}",
         f"--vocab_file={DATA}/vocab.txt", f"--bert_config_file={model_dir}/bert_config.json",
         "--do_lower_case=True", "--max_seq_length=64", "--train_batch_size=32", f"--output_dir={out}",
         f"--random_seed={seed}", *(f"--{k}={v}" for k, v in settings.items()))
    seconds = time.time() - start
    figures = []
    for name, key in (("eval_results.txt", "eval_f1"), ("test_results.txt", "test_f1")):
        with open(os.path.join(out, name), encoding="utf-8") as f:
            figures.append(float(dict(line.strip().split(" = ") for line in f)[key]))
    return (*figures, seconds)


def _summary(values):
    return f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    unknown = sorted(set(FLAGS.rows) - {"fine_tuning", *ROWS})
    if unknown:
        sys.exit(f"--rows: unknown {unknown}; expected fine_tuning or one of {', '.join(ROWS)}")
    out = FLAGS.output_dir
    model_dir = pretrain(out)
    data_dir = os.path.join(out, "ner")
    write_ner_set(data_dir, SMOKE_SPLITS if FLAGS.smoke else SPLITS)
    print("| run_ner | dev F1 | test F1 | s per run |")
    print("|---|---|---|---|")
    for name in FLAGS.rows:
        row = None if name == "fine_tuning" else name
        runs = [fine_tune(model_dir, data_dir, os.path.join(out, f"{name}_{seed}"), seed, row,
                          SMOKE_EPOCHS if FLAGS.smoke else None)
                for seed in range(1, FLAGS.seeds + 1)]
        dev, test, seconds = zip(*runs, strict=True)
        flag = f"--feature_based={row}" if row else "(fine-tuning)"
        print(f"| {flag} | {_summary(dev)} | {_summary(test)} | {statistics.mean(seconds):.0f} |", flush=True)


if __name__ == "__main__":
    app.run(main)
