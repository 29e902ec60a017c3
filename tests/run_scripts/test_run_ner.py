"""run_ner.py as a user runs it: CoNLL-2003 files, learning entities with a cased vocab, conlleval's
figures, predictions in CoNLL format, TFDS's conll2003, and bad inputs named by file and line."""

import json
import os
import random

import pytest

from tests.run_scripts.conftest import run_main_cases
from tests.run_scripts.fine_tuning_helpers import data_variant, read_results, script_flags, write_model

pytestmark = pytest.mark.slow

# Cased: "Paris" is a word of its own; "Boston" and "Londons" split into pieces.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "went", "to", "saw", "in", "with", "and", "met",
         "visited", ".", ",", "said", "today", "Paris", "London", "Rome", "John", "Mary", "Smith", "Acme", "Corp",
         "Globex", "##s", "##ton", "Bos"]
FILL = ["the", "a", "went", "to", "saw", "in", "with", "and", "met", "visited", "said", "today", ",", "xyzzy"]
ENTITIES = {
    "LOC": [["Paris"], ["London"], ["Rome"], ["Boston"], ["Londons"]],
    "PER": [["John", "Smith"], ["Mary"], ["John"]],
    "ORG": [["Acme", "Corp"], ["Globex"]],
}
TFDS_TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def _sentence(rng, n_words):
    """Words and IOB2 tags: entities recognisable by their words among filler words."""
    words, tags = [], []
    while len(words) < n_words:
        if rng.random() < 0.3:
            kind = rng.choice(sorted(ENTITIES))
            entity = rng.choice(ENTITIES[kind])
            words += entity
            tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(entity) - 1)
        else:
            words.append(rng.choice(FILL))
            tags.append("O")
    return words + ["."], tags + ["O"]


def write_conll(directory, n_train=160, n_dev=40, n_test=24, seed=0):
    """train/valid/test.txt in CoNLL-2003's layout (word POS chunk tag), one sentence in ten
    longer than max_seq_length 24. Returns the test sentences as (words, tags)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    test = []
    for name, n in (("train", n_train), ("valid", n_dev), ("test", n_test)):
        lines = ["-DOCSTART- -X- -X- O", ""]
        for i in range(n):
            words, tags = _sentence(rng, rng.randint(26, 36) if i % 10 == 3 else rng.randint(3, 9))
            lines += [f"{w} NNP I-NP {t}" for w, t in zip(words, tags, strict=True)] + [""]
            if name == "test":
                test.append((words, tags))
        (directory / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return test


@pytest.fixture
def model_dir(tmp_path):
    return write_model(tmp_path / "model", VOCAB)


def _flags(model_dir, data_dir, out, **overrides):
    values = dict(
        do_train=True, do_eval=True, do_predict=True, data_dir=data_dir, do_lower_case=False, max_seq_length=24,
        train_batch_size=16, learning_rate=3e-3, num_train_epochs=8, save_checkpoints_steps=1000, output_dir=out,
        iterations_per_loop=40, window_context_words=4,
    )
    return script_flags(model_dir, {**values, **overrides})


def _sentences(path):
    """A predictions file's sentences, each a list of its lines' fields."""
    blocks = [block for block in path.read_text().split("\n\n") if block.strip()]
    return [[line.split(" ") for line in block.splitlines()] for block in blocks]


# conll2003 through TFDS: rows of words and their ClassLabel ids, as mock_data's as_dataset_fn.
_TFDS_PRELUDE = r"""
import numpy as np, tensorflow as tf, tensorflow_datasets as tfds
rows = [{"tokens": np.array([w.encode() for w in words], object), "ner": np.array(ids, np.int64)}
        for words, ids in json.loads(%r)]
def as_dataset(self, *args, **kwargs):
    spec = {"tokens": tf.TensorSpec([None], tf.string), "ner": tf.TensorSpec([None], tf.int64)}
    return tf.data.Dataset.from_generator(lambda: iter(rows), output_signature=spec)
context = tfds.testing.mock_data(as_dataset_fn=as_dataset)
"""


def test_learns_entities_writes_conlleval_figures_and_predictions_and_reads_tfds(tmp_path, model_dir):
    data = tmp_path / "conll"
    test_sentences = write_conll(data)
    untagged = tmp_path / "untagged"
    untagged.mkdir()
    (untagged / "test.txt").write_text("".join("\n".join(w) + "\n\n" for w, _ in test_sentences[:5]))
    rng = random.Random(3)
    tfds_rows = [_sentence(rng, rng.randint(2, 6)) for _ in range(6)]
    tfds_rows = [(w, [TFDS_TAGS.index(t) for t in tags]) for w, tags in tfds_rows]
    trained, reused, tfds_out = tmp_path / "trained", tmp_path / "reused", tmp_path / "tfds"
    reused.mkdir()
    (reused / "test_results.txt").write_text("test_f1 = 0.5\n")  # an earlier, tagged test set's figures
    cases = [
        _flags(model_dir, data, trained),
        # The trained run's tags and weights (--init_checkpoint), predicting an untagged file.
        _flags(model_dir, untagged, reused, do_train=False, do_eval=False, init_checkpoint=trained),
        _flags(model_dir, None, tfds_out, tfds_name="conll2003", num_train_epochs=1, train_batch_size=2),
    ]
    assert run_main_cases("run_ner", cases, prelude=_TFDS_PRELUDE % json.dumps(tfds_rows)) == ["ok"] * 3

    record_labels = ["O", "B-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    results = read_results(trained / "eval_results.txt")
    assert float(results["eval_f1"]) > 0.9, results
    assert {"eval_precision", "eval_recall", "eval_accuracy", "eval_loss", "loss", "global_step"} <= set(results)
    assert {f"eval_{kind}_{m}" for kind in ENTITIES for m in ("precision", "recall", "f1", "gold")} <= set(results)
    assert int(results["eval_gold_entities"]) == sum(int(results[f"eval_{k}_gold"]) for k in ENTITIES)
    # test_predictions.txt: every word of every test sentence, in order, its gold tag, a tag.
    blocks = _sentences(trained / "test_predictions.txt")
    expected = [[[w, t] for w, t in zip(*s, strict=True)] for s in test_sentences]
    assert [[line[:2] for line in b] for b in blocks] == expected
    assert all(len(line) == 3 and line[2] in record_labels for b in blocks for line in b)
    test_results = read_results(trained / "test_results.txt")
    assert float(test_results["test_f1"]) > 0.9 and test_results["global_step"] == results["global_step"]
    record = json.loads((trained / "fine_tuning_task.json").read_text())
    assert record["labels"] == record_labels and record["do_lower_case"] is False
    assert (trained / "vocab.txt").read_text().split() == VOCAB and (trained / "bert_config.json").exists()

    # The untagged file: `word predicted` lines, the same predictions as the trained run's.
    assert _sentences(reused / "test_predictions.txt") == [[[line[0], line[2]] for line in b] for b in blocks[:5]]
    assert not (reused / "test_results.txt").exists()  # removed: they were not this test set's

    # TFDS: TFDS's tag names, every split read.
    assert json.loads((tfds_out / "fine_tuning_task.json").read_text())["labels"] == TFDS_TAGS
    assert "eval_f1" in read_results(tfds_out / "eval_results.txt")
    assert len(_sentences(tfds_out / "test_predictions.txt")) == 6


def test_bad_input_fails_before_training_naming_the_file_and_line(tmp_path, model_dir):
    data = tmp_path / "conll"
    write_conll(data, n_train=6, n_dev=3, n_test=3)
    good = {name: (data / name).read_text() for name in ("train.txt", "valid.txt", "test.txt")}

    def folder(name, **files):
        return data_variant(tmp_path / name, good, **files)

    missing_tag = folder(
        "missing_tag", **{"train.txt": "-DOCSTART- -X- -X- O\n\nEU NNP I-NP B-ORG\nrejects VBZ I-VP\n"}
    )
    unknown_tag = folder("unknown_tag", **{"test.txt": "EU NNP I-NP B-ORG\n\nGerman JJ I-NP B-MISC\n"})
    empty = folder("empty", **{"valid.txt": ""})
    no_dev = folder("no_dev", **{"valid.txt": None})
    labels = tmp_path / "labels.txt"
    labels.write_text("O\nB-LOC\nB-ORG\nI-ORG\nB-PER\nI-PER\n")
    twice = tmp_path / "twice.txt"
    twice.write_text("O\nB-LOC\nO\n")
    other_task = tmp_path / "other_task"
    other_task.mkdir()
    (other_task / "fine_tuning_task.json").write_text(
        json.dumps({"task_name": "cola", "label_kind": "single", "labels": ["0", "1"]})
    )

    def out(i):
        return tmp_path / f"out{i}"

    cases = [
        (dict(data_dir=missing_tag), f"{missing_tag / 'train.txt'}:4: 3 column(s), but line 3 has 4"),
        (
            dict(data_dir=unknown_tag, labels=labels),
            f"{unknown_tag / 'test.txt'}:3: tag 'B-MISC' is not one of the labels",
        ),
        (dict(data_dir=empty), f"{empty / 'valid.txt'}: no sentences"),
        (dict(data_dir=no_dev), "no dev file 'valid.txt' in --data_dir"),
        (dict(do_train=False), "nothing to evaluate or predict with"),
        # A pre-trained model to evaluate, but nothing says which tags its head has.
        (
            dict(do_train=False, init_checkpoint=tmp_path / "pretrained" / "bert_model.ckpt"),
            "no tag set: pass --labels",
        ),
        (dict(labels=twice), "twice.txt:3: tag 'O' is listed twice (line 1)"),
        (dict(data_dir=None), "--data_dir (the CoNLL files) or --tfds_name (tensorflow-datasets) is required"),
        (dict(output_dir=other_task), "holds a run of task 'cola'"),
        (dict(max_seq_length=64), "Cannot use sequence length 64"),
        (dict(window_context_words=-1), "--window_context_words=-1 must not be negative"),
        (
            dict(do_train=False, do_eval=False, do_predict=False),
            "At least one of `do_train`, `do_eval` or `do_predict'",
        ),
        (
            dict(do_lower_case=True, init_checkpoint="/x/cased_L-12_H-768_A-12/bert_model.ckpt"),
            "seems to be a cased model",
        ),
    ]
    argvs = []
    for i, (overrides, _) in enumerate(cases):
        values = {"data_dir": data, "output_dir": out(i)} | overrides
        argvs.append(_flags(model_dir, values.pop("data_dir"), values.pop("output_dir"), **values))
    outcomes = run_main_cases("run_ner", argvs)
    for (overrides, message), outcome, i in zip(cases, outcomes, range(len(cases)), strict=True):
        assert message in outcome, (overrides, outcome)
        assert outcome.startswith("run_ner.py: error: ")
        assert not os.path.exists(out(i) / "checkpoint") and not os.path.exists(out(i) / "fine_tuning_task.json")


def test_feature_based_trains_only_the_bilstm_over_the_frozen_encoder_and_bad_settings_fail_first(tmp_path, model_dir):
    """--feature_based (paper §5.3, Table 7): entities learnt through the BiLSTM, the encoder's
    weights those of --init_checkpoint bit for bit, the settings in the record; an evaluation
    alone takes them from the run, and bad settings fail before any work."""
    import keras
    import numpy as np

    from bert_tf.checkpoints import original_weights, restore, save_original_checkpoint
    from bert_tf.models import BertEncoder
    from tests.run_scripts.conftest import run_script
    from tests.tiny import tiny_config

    data = tmp_path / "conll"
    write_conll(data)
    config = tiny_config(vocab_size=len(VOCAB))
    keras.utils.set_random_seed(5)
    pre_trained = BertEncoder.from_bert_config(config)  # a stand-in, in Google's layout
    google = save_original_checkpoint(pre_trained, str(tmp_path / "google" / "bert_model.ckpt"))
    weights = original_weights(pre_trained)
    trained, again = tmp_path / "trained", tmp_path / "again"
    settings = dict(feature_based="second_to_last", lstm_units=32)
    cases = [
        # A BiLSTM on fixed features learns more slowly than fine-tuning does: more epochs.
        _flags(model_dir, data, trained, init_checkpoint=google, learning_rate=3e-2, num_train_epochs=24, **settings),
        # Evaluating the trained run from another folder: its settings must be given.
        _flags(model_dir, data, again, do_train=False, init_checkpoint=trained, **settings),
        _flags(model_dir, data, tmp_path / "bad1", do_train=False, init_checkpoint=trained),
        _flags(model_dir, data, tmp_path / "bad2", lstm_units=0, **{"feature_based": "last"}),
        _flags(model_dir, data, tmp_path / "bad3", feature_based="concat_last_four"),
        _flags(model_dir, data, tmp_path / "bad4", lora_rank=4, feature_based="last"),
    ]
    outcomes = run_main_cases("run_ner", cases)
    assert outcomes[:2] == ["ok", "ok"]
    assert outcomes[2] == (
        f"run_ner.py: error: --feature_based=None (fine-tuned) is not the model in {trained}, trained with "
        "--feature_based=second_to_last, --lstm_units=32: give its settings"
    )
    assert outcomes[3] == "run_ner.py: error: --lstm_units=0 must be at least 1"
    assert outcomes[4] == (
        "run_ner.py: error: --feature_based='concat_last_four' needs at least 4 hidden layers, but the encoder has 2"
    )
    assert outcomes[5] == "run_ner.py: error: --lora_rank=4 with --feature_based=last: the encoder is frozen"
    for bad in ("bad1", "bad2", "bad3", "bad4"):
        assert not (tmp_path / bad / "fine_tuning_task.json").exists()

    results = read_results(trained / "eval_results.txt")
    assert float(results["eval_f1"]) > 0.9, results
    assert read_results(again / "eval_results.txt")["eval_f1"] == results["eval_f1"]
    assert _sentences(again / "test_predictions.txt") == _sentences(trained / "test_predictions.txt")
    record = json.loads((trained / "fine_tuning_task.json").read_text())
    assert (record["feature_based"], record["lstm_units"]) == ("second_to_last", 32)
    encoder = BertEncoder.from_bert_config(config)
    restore(encoder, str(trained))  # the run's last checkpoint
    for name, value in original_weights(encoder).items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)

    # absl refuses an unknown LAYERS name, and the flags in any other script, in one line naming them.
    for script, flag, line in [
        ("run_ner.py", "--feature_based=first", "flag --feature_based=first: value should be one of <embeddings|"),
        ("run_classifier.py", "--feature_based=last", "Unknown command line flag 'feature_based'"),
        ("run_squad.py", "--lstm_units=8", "Unknown command line flag 'lstm_units'"),
    ]:
        result = run_script(script, flag, f"--output_dir={tmp_path / 'absl'}")
        assert result.returncode != 0 and line in result.stderr.strip().splitlines()[-2], result.stderr
    assert not (tmp_path / "absl").exists()
