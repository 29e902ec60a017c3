"""The quickstart (run_scripts/quickstart.py) and the task it fine-tunes on (data/sentiment)."""

import ast
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import tokenization
from bert_tf.tasks.classifier import catalog
from tests.run_scripts.conftest import REPO, run_script
from tests.run_scripts.script_cases import run_cases

TASK = os.path.join(REPO, "data", "sentiment")

# data/sentiment/test.tsv's sentences with the sentiment they were written with (SST-2's labels).
WRITTEN = [
    ("The coffee was hot and the pastries were fresh.", "positive", "1"),
    ("The train was late and the station was cold.", "negative", "0"),
    ("The orchestra was famous and the songs were great.", "positive", "1"),
    ("The path was muddy and the walkers were tired.", "negative", "0"),
    ("The museum was quiet and the photographs were the best.", "positive", "1"),
    ("The storm ruined the garden and the market was empty.", "negative", "0"),
]
# TensorFlow's C++ log lines, its oneDNN and CUDA notices and absl's preamble.
STARTUP = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w./-]+\.cc:\d+\] |absl::InitializeLog|oneDNN custom|cuda drivers",
                     re.M)


def _results(path):
    return dict(line.strip().split(" = ") for line in path.read_text().splitlines() if line.strip())


def _pretraining_records(path):
    """(records, masked-LM accuracy of always predicting the most frequent masked token)."""
    import tensorflow as tf

    records, masked = 0, []
    for record in tf.data.TFRecordDataset(str(path)):
        feature = tf.train.Example.FromString(record.numpy()).features.feature
        ids, weights = feature["masked_lm_ids"].int64_list.value, feature["masked_lm_weights"].float_list.value
        masked += [i for i, w in zip(ids, weights, strict=True) if w > 0]
        records += 1
    return records, np.bincount(masked).max() / len(masked)


def test_the_sentiment_task_reads_as_sst2_with_every_word_a_whole_token_of_the_vocab():
    processor = catalog.create_processor("sst-2")
    train, dev = processor.get_train_examples(TASK), processor.get_dev_examples(TASK)
    test = processor.get_test_examples(TASK)
    assert [e.text_a for e in test] == [sentence for sentence, _, _ in WRITTEN]
    for examples, size in ((train, 120), (dev, 40)):
        assert sorted(e.label for e in examples) == ["0"] * (size // 2) + ["1"] * (size // 2)
    sentences = [e.text_a for e in train + dev + test]
    assert len(set(sentences)) == len(sentences) == 166
    tokenizer = tokenization.FullTokenizer(os.path.join(REPO, "data", "vocab.txt"), do_lower_case=True)
    for sentence in sentences:
        words = re.findall(r"\w+|[^\w\s]", sentence.lower())
        assert tokenizer.tokenize(sentence) == words, sentence  # no [UNK], no word in pieces


@pytest.mark.slow
def test_the_whole_road_prints_each_steps_figure_and_where_its_output_is(tmp_path):
    """One run, pre-training shortened to 200 steps; TensorFlow's start-up lines are not shown."""
    out = tmp_path / "quickstart"
    env = {**{k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}, "KERAS_BACKEND": "tensorflow"}
    command = [sys.executable, os.path.join(REPO, "run_scripts", "quickstart.py"), f"--output_dir={out}",
               "--num_train_steps=200"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not STARTUP.search(result.stderr), result.stderr
    stdout = result.stdout
    figures = dict(re.findall(r"^==> (\d)\. (.*)$", stdout, re.M))
    for script in ("create_pretraining_data", "run_pretraining", "run_classifier", "export_saved_model"):
        assert f"\n$ python run_scripts/{script}.py --" in stdout

    records, majority = _pretraining_records(out / "train.tfrecord")
    assert records > 1000  # 180 sentences, dupe_factor 20
    assert figures["1"] == f"{records} pre-training instances written to {out / 'train.tfrecord'}"

    pretraining = out / "pretraining_output"
    results = _results(pretraining / "eval_results.txt")
    mlm, nsp = float(results["masked_lm_accuracy"]), float(results["next_sentence_accuracy"])
    assert figures["2"] == (
        f"masked-LM accuracy {mlm:.3f} after 200 steps (always predicting the most frequent token: "
        f"{majority:.3f}; uniform chance: 0.0011); next-sentence accuracy {nsp:.3f}"
    )
    assert mlm > majority and nsp > 0.55
    assert f"    checkpoints and eval_results.txt in {pretraining} (tensorboard --logdir={pretraining})" in stdout
    assert (pretraining / "checkpoint").exists()

    classifier = out / "classifier_output"
    accuracy = float(_results(classifier / "eval_results.txt")["eval_accuracy"])
    dev = os.path.join(REPO, "data", "sentiment", "dev.tsv")
    assert figures["3"] == f"eval accuracy {accuracy:.3f} on the 40 sentences of {dev}"
    assert accuracy >= 0.8  # 0.9 to 1.0 over seeds and pre-training lengths
    assert f"    run in {classifier}\n" in stdout and (classifier / "checkpoint").exists()

    export = out / "classifier_export"
    size = sum(f.stat().st_size for f in export.rglob("*") if f.is_file())
    assert figures["4"] == f"SavedModel of {size / 1e6:.1f} MB in {export}"
    assert (export / "saved_model.pb").exists()

    program = out / "classify.py"
    imported = set()
    for node in ast.walk(ast.parse(program.read_text())):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {a.name for a in node.names} if isinstance(node, ast.Import) else {node.module}
    assert imported == {"os", "sys", "tensorflow", "tensorflow_text"}  # nothing of this repository
    # Each sentence marked against the sentiment it was written with, and a word on the model's mistakes.
    marked = re.findall(
        r"^  (\u2713|\u2717|\+|x) (\w+) \(label (\d), probability ([\d.]+)\)(?:, written as (\w+))?: (.*)$",
        stdout, re.M)
    assert [s for *_, s in marked] == [sentence for sentence, _, _ in WRITTEN]
    right = 0
    for (mark, name, label, probability, written_as, _), (_, written_name, written) in zip(
            marked, WRITTEN, strict=True):
        assert name == {"0": "negative", "1": "positive"}[label] and 0.5 < float(probability) <= 1
        assert (mark in ("\u2713", "+")) == (label == written) == (written_as == "")
        assert written_as in ("", written_name)
        right += label == written
    yes, no = ("\u2713", "\u2717") if marked[0][0] in ("\u2713", "\u2717") else ("+", "x")
    assert figures["5"] == (
        f"{right} of 6 right ({yes}: as written, {no}: not), served by {program} with TensorFlow and "
        "tensorflow-text alone"
    )
    assert figures["5"] + (
        "\n    A 2-layer, hidden-64 model trained for seconds on 30 short documents and 120 sentences makes mistakes"
        "\n    of its own; that bert_tf computes what Google's BERT computes is what the test suite checks "
        "(python -m pytest).\n"
    ) in stdout
    assert re.search(rf"\nQuickstart done in \d+ s\. Everything is in {re.escape(str(out))}\n$", stdout)


@pytest.mark.slow
def test_bad_flags_fail_before_any_work_and_a_failed_step_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    blocked = tmp_path / "blocked"
    (blocked / "train.tfrecord").mkdir(parents=True)  # where the first step writes its data
    cases = [
        ["--num_train_steps=0", f"--output_dir={tmp_path / 'new'}"],
        [f"--output_dir={tmp_path / 'file'}"],
        [f"--output_dir={tmp_path / 'file' / 'run'}"],
        [f"--output_dir={blocked}"],
    ]
    outcomes, _, stderr = run_cases("quickstart", cases)
    error = "quickstart.py: error: "
    assert outcomes == [
        f"{error}--num_train_steps=0 must be at least 1",
        f"{error}--output_dir={tmp_path / 'file'} is a file, not a folder",
        f"{error}--output_dir={tmp_path / 'file' / 'run'} is under {tmp_path / 'file'}, which is a file, not a folder",
        f"{error}create_pretraining_data.py failed (exit code 1); its error is above",
    ]
    assert not (tmp_path / "new").exists()
    # The step's own one-line error is shown, and no traceback from either process.
    assert re.search(r"create_pretraining_data.py: error: --output_file=.*train.tfrecord is a directory", stderr)
    assert "Traceback" not in stderr
    # TensorFlow's frozen-weights switch (serving's) would make its training steps wrong: refused first.
    frozen = run_script("quickstart.py", f"--output_dir={tmp_path / 'frozen'}",
                        env={"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "true"})
    assert frozen.returncode == 1 and frozen.stderr.strip().splitlines()[-1].startswith(
        f"{error}TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=true is set in this environment: ")
    assert not (tmp_path / "frozen").exists()
