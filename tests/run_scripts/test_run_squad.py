"""run_squad.py as a user runs it: SQuAD files in the release's layout, learning, the
original's output files and official evaluation, an exact resume after kill -9, Google's
fine-tuned layout both ways, TFDS, and bad inputs."""

import json
import random
import types

import numpy as np
import pytest

from tests.helpers import dead_owner_tag
from tests.run_scripts.conftest import (
    converted_to_original,
    killed_and_rerun,
    run_main_cases,
    run_script,
    served_export,
)
from tests.tiny import tiny_config, write_vocab

pytestmark = pytest.mark.slow

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    "the", "a", "cat", "dog", "bird", "sat", "on", "mat", "red", "blue", "is", "big", "small", "and",
    "where", "?", ".", ",", "run", "##s", "##ning", "cafe", "near",
]
FILL = ["the", "a", "sat", "on", "mat", "red", "blue", "is", "big", "small", "and", "runs", "running", "near", "café"]
SEQ = 32


def _paragraph(rng, qid, impossible=False):
    """A context of filler words with a dog and (unless `impossible`) one cat, irregular
    whitespace and punctuation glued to words; the question asks where the cat is, the answer
    at its character offset (v2.0: unanswerable when there is no cat)."""
    words = rng.choices(FILL, k=rng.randint(16, 26)) + ["dog"] + ([] if impossible else ["cat"])
    rng.shuffle(words)
    context = ""
    for i, word in enumerate(words):
        context += word + ("," if i % 7 == 6 else "") + rng.choice([" ", " ", "  ", "\t", " \n"])
    context = context.strip() + "."
    qa = {"id": f"q{qid}", "question": "where is the cat ?", "answers": []}
    if impossible:
        qa.update(is_impossible=True, plausible_answers=[{"text": "dog", "answer_start": context.index("dog")}])
    else:
        qa["answers"] = [{"text": "cat", "answer_start": context.index("cat")}]
    return {"context": context, "qas": [qa]}


def write_squad(path, paragraphs, seed=0, version="1.1"):
    rng = random.Random(seed)
    data = [
        {"title": f"article {a}",
         "paragraphs": [_paragraph(rng, f"{a}-{p}", version == "v2.0" and p % 3 == 0) for p in range(paragraphs // 4)]}
        for a in range(4)
    ]
    path.write_text(json.dumps({"version": version, "data": data}), encoding="utf-8")
    return path


@pytest.fixture
def model_dir(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    config = tiny_config(vocab_size=len(VOCAB), max_position_embeddings=64)
    (d / "bert_config.json").write_text(json.dumps(config.to_dict()))
    write_vocab(d / "vocab.txt", VOCAB)
    return d


def _flags(model_dir, out, **overrides):
    values = dict(
        vocab_file=model_dir / "vocab.txt", bert_config_file=model_dir / "bert_config.json", output_dir=out,
        max_seq_length=SEQ, doc_stride=8, max_query_length=8, train_batch_size=16, predict_batch_size=8,
        learning_rate=3e-3, num_train_epochs=4, save_checkpoints_steps=10, iterations_per_loop=10,
        max_answer_length=5, n_best_size=5,
    )
    values.update(overrides)
    return [f"--{k}={v}" for k, v in values.items() if v is not None] + ["--noprogress"]


def _json(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_learns_v1_writes_the_originals_files_and_resumes_exactly_after_kill(tmp_path, model_dir):
    train = write_squad(tmp_path / "train-v1.1.json", 96, seed=1)
    dev = write_squad(tmp_path / "dev-v1.1.json", 24, seed=2)
    straight = tmp_path / "straight"
    flags = dict(do_train=True, train_file=train, do_predict=True, predict_file=dev)
    result = run_script("run_squad.py", *_flags(model_dir, straight, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    # Its loss reads the padding positions' logits (the original's softmax over them): not skipped.
    assert "skip_padding=False: the default with length_bucket" in result.stderr
    assert "a loss over the padding positions" in result.stderr
    predictions = _json(straight / "predictions.json")
    questions = [qa for a in _json(dev)["data"] for p in a["paragraphs"] for qa in p["qas"]]
    assert list(predictions) == [qa["id"] for qa in questions]  # every question, in file order
    nbest = _json(straight / "nbest_predictions.json")
    for qa in questions:
        entries = nbest[qa["id"]]
        assert 1 <= len(entries) <= 5 and entries[0]["text"] == predictions[qa["id"]]
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0, abs=1e-5)
    assert not (straight / "null_odds.json").exists()
    metrics = _json(straight / "eval_results.json")
    assert set(metrics) == {"exact_match", "f1"} and metrics["exact_match"] > 90, metrics
    assert (straight / "train.tf_record").exists() and (straight / "eval.tf_record").exists()
    record = _json(straight / "fine_tuning_task.json")
    assert record["task_name"] == "squad" and record["kind"] == "squad"

    # kill -9 after the first checkpoint, then the same command: the same answers and logits.
    resumed = tmp_path / "resumed"
    again = killed_and_rerun("run_squad.py", _flags(model_dir, resumed, **flags), resumed)
    assert "Training resumed from" in again.stderr and "Reusing" in again.stderr
    assert (resumed / "nbest_predictions.json").read_text() == (straight / "nbest_predictions.json").read_text()

    # Our run written back in the original layout (cls/squad/...), and predicting from it...
    original = tmp_path / "original" / "bert_model.ckpt"
    shapes = converted_to_original(straight, original)
    assert shapes["cls/squad/output_weights"] == [2, 32] and shapes["cls/squad/output_bias"] == [2]
    reread = tmp_path / "reread"
    # ... on two replicas (the CPU split in two): features are matched to logits by position.
    result = run_script("run_squad.py", *_flags(model_dir, reread, do_predict=True, predict_file=dev,
                                                init_checkpoint=original, num_cpu_devices=2,
                                                distribution_strategy="mirrored", predict_batch_size=6))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "with 2 replica(s)" in result.stderr
    assert (reread / "predictions.json").read_text() == (straight / "predictions.json").read_text()
    nbest_again = _json(reread / "nbest_predictions.json")
    for qid, entries in _json(straight / "nbest_predictions.json").items():
        np.testing.assert_allclose([e["start_logit"] for e in nbest_again[qid]], [e["start_logit"] for e in entries],
                                   atol=1e-5)


def test_v2_tfds_and_bad_inputs_in_one_process(tmp_path, model_dir):
    """SQuAD v2.0 (null answers, null_odds.json, the official v2.0 figures), TFDS's
    squad/v1.1 and squad/v2.0 (tfds.testing.mock_data serving our rows), and bad inputs, each a
    one-line error naming the flag, file or question."""
    train2 = write_squad(tmp_path / "train-v2.0.json", 96, seed=3, version="v2.0")
    dev2 = write_squad(tmp_path / "dev-v2.0.json", 12, seed=4, version="v2.0")
    v1 = write_squad(tmp_path / "train-v1.1.json", 8, seed=5)
    # The original logs and skips a training question whose answer is not at answer_start.
    shifted = json.loads(v1.read_text())
    paragraph = shifted["data"][0]["paragraphs"][0]
    paragraph["qas"][0]["answers"][0]["answer_start"] = paragraph["context"].index("dog")  # "cat" at the dog
    shifted_file = tmp_path / "shifted.json"
    shifted_file.write_text(json.dumps(shifted))
    malformed = tmp_path / "malformed.json"
    malformed.write_text(v1.read_text()[:-40])
    duplicated = json.loads(dev2.read_text())
    duplicated["data"][1]["paragraphs"][0]["qas"][0]["id"] = duplicated["data"][0]["paragraphs"][0]["qas"][0]["id"]
    duplicated_file = tmp_path / "duplicated.json"
    duplicated_file.write_text(json.dumps(duplicated))
    partial = json.loads(dev2.read_text())
    del partial["data"][2]["paragraphs"][1]["qas"][0]["answers"]
    partial_file = tmp_path / "partial.json"
    partial_file.write_text(json.dumps(partial))
    unanswered = json.loads(dev2.read_text())  # a test set: no answers at all
    for article in unanswered["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for key in ("answers", "is_impossible", "plausible_answers"):
                    qa.pop(key, None)
    unanswered_file = tmp_path / "test-v2.0.json"
    unanswered_file.write_text(json.dumps(unanswered))
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"version": "1.1", "data": []}))
    classifier_run = tmp_path / "classifier_run"
    classifier_run.mkdir()
    classifier_record = {"task_name": "MRPC", "do_lower_case": True, "max_seq_length": 32}
    (classifier_run / "fine_tuning_task.json").write_text(json.dumps(classifier_record))

    # TFDS rows: our v2.0 files flattened as tensorflow-datasets' squad features.
    rows = {}
    for split, path in (("train", train2), ("validation", dev2)):
        rows[split] = [
            {"id": qa["id"], "title": article["title"], "context": paragraph["context"], "question": qa["question"],
             "answers": qa["answers"], "is_impossible": qa.get("is_impossible", False),
             "plausible_answers": qa.get("plausible_answers", [])}
            for article in json.loads(path.read_text())["data"]
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
        ]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    prelude = f"""
import tensorflow as tf, tensorflow_datasets as tfds
ROWS = json.load(open({str(tmp_path / "rows.json")!r}))
def _as_dataset(self, split, **kwargs):
    v2 = self.name == "squad" and "v2" in str(self.builder_config.name)
    def rows():
        for r in ROWS[str(split)]:
            row = {{k: r[k] for k in ("id", "title", "context", "question")}}
            for key in ("answers",) + (("plausible_answers",) if v2 else ()):
                row[key] = {{"text": [a["text"] for a in r[key]], "answer_start": [a["answer_start"] for a in r[key]]}}
            if v2:
                row["is_impossible"] = r["is_impossible"]
            elif r["is_impossible"]:
                continue
            yield row
    answers = {{"text": tf.TensorSpec([None], tf.string), "answer_start": tf.TensorSpec([None], tf.int32)}}
    signature = {{k: tf.TensorSpec([], tf.string) for k in ("id", "title", "context", "question")}}
    signature["answers"] = answers
    if v2:
        signature.update(plausible_answers=answers, is_impossible=tf.TensorSpec([], tf.bool))
    return tf.data.Dataset.from_generator(rows, output_signature=signature)
context = tfds.testing.mock_data(as_dataset_fn=_as_dataset)
"""
    from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint

    config = tiny_config(vocab_size=len(VOCAB), max_position_embeddings=64)
    pretrained = write_tf1_checkpoint(tmp_path / "uncased_L-2_H-32" / "bert_model.ckpt",
                                      random_weights(original_shapes(config), seed=8))
    v2, tfds1, tfds2, relabelled = tmp_path / "v2", tmp_path / "tfds1", tmp_path / "tfds2", tmp_path / "relabelled"
    train_v2 = dict(do_train=True, train_file=train2, do_predict=True, predict_file=dev2, version_2_with_negative=True,
                    num_train_epochs=6)
    bad = tmp_path / "bad"
    (bad / "g").mkdir(parents=True)
    killed = bad / "g" / f".train.tf_record.{dead_owner_tag()}.0badc0de.tmp"
    killed.write_bytes(b"left by a killed run")
    predict_v2 = dict(do_predict=True, version_2_with_negative=True, init_checkpoint=v2)
    cases = [
        _flags(model_dir, v2, **train_v2),
        _flags(model_dir, tfds1, do_train=True, do_predict=True, tfds_name="squad/v1.1", num_train_epochs=1),
        _flags(model_dir, tfds2, do_predict=True, tfds_name="squad/v2.0", version_2_with_negative=True,
               init_checkpoint=v2),
        _flags(model_dir, bad / "a", do_train=True, train_file=train2),
        _flags(model_dir, bad / "b", do_predict=True, predict_file=malformed, init_checkpoint=v2),
        _flags(model_dir, bad / "c", do_predict=True),
        _flags(model_dir, bad / "d", do_train=True, train_file=v1, max_seq_length=11),
        _flags(model_dir, classifier_run, do_train=True, train_file=v1),
        _flags(model_dir, bad / "e", do_predict=True, predict_file=v1),
        _flags(model_dir, bad / "f", do_train=True, train_file=tmp_path),
        _flags(model_dir, bad / "g", do_train=True, train_file=shifted_file, num_train_epochs=1, train_batch_size=2,
               init_checkpoint=pretrained),  # and Google's pre-trained layout starts the training
        _flags(model_dir, bad / "h", predict_file=duplicated_file, **predict_v2),
        _flags(model_dir, bad / "i", predict_file=partial_file, **predict_v2),
        _flags(model_dir, bad / "j", do_train=True, train_file=empty),
        _flags(model_dir, bad / "k", do_train=True, train_file=v1, gradient_accumulation_steps=3),
        # Predicting a dev set, then a test set (no answers) into the same folder: the dev
        # set's figures do not stay beside the test set's predictions.
        _flags(model_dir, relabelled, predict_file=dev2, **predict_v2),
        _flags(model_dir, relabelled, predict_file=unanswered_file, **predict_v2),
    ]
    outcomes = run_main_cases("run_squad", cases, prelude=prelude)
    assert outcomes[:3] == ["ok"] * 3, outcomes[:3]
    assert "train-v2.0.json" in outcomes[3] and "is_impossible" in outcomes[3]
    assert "--version_2_with_negative" in outcomes[3]
    assert "malformed.json" in outcomes[4] and "line" in outcomes[4]
    assert "If `do_predict` is True, then `predict_file`" in outcomes[5]
    assert "The max_seq_length (11) must be greater than max_query_length (8) + 3" in outcomes[6]
    assert "holds a run of task 'MRPC'" in outcomes[7]
    assert "nothing to evaluate or predict with" in outcomes[8]
    assert "--train_file" in outcomes[9] and "is a directory" in outcomes[9]
    assert outcomes[10] == "ok"
    assert _json(bad / "g" / "train.tf_record.json")["stats"]["skipped_answer_mismatch"] == 1
    assert "question id 'q0-0' appears twice" in outcomes[11] and "duplicated.json" in outcomes[11]
    assert "partial.json: question 'q2-1' has no answers" in outcomes[12]
    assert "empty.json: no question to train on" in outcomes[13]
    assert "--train_batch_size=16 is not divisible by 1 replica(s) x 3 accumulation step(s)" in outcomes[14]
    assert outcomes[15:] == ["ok", "ok"]
    assert not (relabelled / "eval_results.json").exists() and not (relabelled / "eval_results.txt").exists()
    assert set(_json(relabelled / "predictions.json")) == set(_json(v2 / "predictions.json"))
    assert not killed.exists()  # a killed run's temporary, removed
    assert not any((bad / name).exists() for name in "abcdefhijk")  # a failed start leaves nothing

    # v2.0: unanswerable questions answered "", the null odds written, the official v2.0 figures.
    predictions, null_odds = _json(v2 / "predictions.json"), _json(v2 / "null_odds.json")
    assert list(null_odds) == list(predictions)
    impossible = {
        qa["id"] for a in _json(dev2)["data"] for p in a["paragraphs"] for qa in p["qas"] if qa.get("is_impossible")
    }
    assert impossible and all(predictions[q] == "" for q in impossible)
    metrics = _json(v2 / "eval_results.json")
    assert metrics["NoAns_total"] == len(impossible) and metrics["exact"] > 90 and "best_f1_thresh" in metrics
    # TFDS: the same questions, written as SQuAD json in output_dir and answered.
    assert set(_json(tfds2 / "predictions.json")) == set(predictions)
    assert _json(tfds2 / "eval_results.json")["total"] == len(predictions)
    assert _json(tfds1 / "predictions.json") and "exact_match" in _json(tfds1 / "eval_results.json")


def test_an_original_fine_tuned_checkpoint_predicts_what_the_original_computes(tmp_path, model_dir):
    """Google's layout with run_squad's cls/squad/output_weights [2, hidden] (and Adam slots):
    predictions and n-best lists equal the original's procedure restated (features, a numpy
    BERT, the n-best rules); our run written back to that layout predicts the same."""
    from bert_tf.tokenization import FullTokenizer
    from tests import numpy_bert
    from tests.original_squad import original_examples, original_features
    from tests.tasks.squad.test_predictions import reference_predictions
    from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint

    config = tiny_config(vocab_size=len(VOCAB), max_position_embeddings=64)
    weights = random_weights(original_shapes(config, with_heads=False), seed=5)
    rng = np.random.default_rng(6)
    weights["cls/squad/output_weights"] = rng.normal(0, 0.5, (2, config.hidden_size)).astype(np.float32)
    weights["cls/squad/output_bias"] = np.array([0.1, -0.2], np.float32)
    slots = {f"{k}/adam_m": np.zeros_like(v) for k, v in weights.items()}
    ckpt = write_tf1_checkpoint(tmp_path / "squad_finetuned" / "model.ckpt-88", {**weights, **slots})
    # Single-piece lower-case words (a span's final text is then its words), several windows each.
    words = ["the", "a", "cat", "dog", "bird", "sat", "on", "mat", "red", "blue", "is", "big", "small", "and", "near"]
    word_rng = random.Random(7)
    paragraphs = [{"context": " ".join(word_rng.choices(words, k=word_rng.randint(20, 40))),
                   "qas": [{"id": f"q{i}-{j}", "question": " ".join(word_rng.choices(words, k=word_rng.randint(3, 12))),
                            "answers": []}
                           for j in range(2)]} for i in range(5)]
    dev = tmp_path / "test.json"
    dev.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))
    out = tmp_path / "out"
    case = _flags(model_dir, out, do_predict=True, predict_file=dev, init_checkpoint=ckpt)
    assert run_main_cases("run_squad", [case]) == ["ok"]
    assert not (out / "eval_results.json").exists()  # no answers in the file: nothing to evaluate

    tokenizer = FullTokenizer(str(model_dir / "vocab.txt"))
    examples = original_examples(dev, False, False)
    features = list(original_features(examples, tokenizer, SEQ, 8, 8, False))
    ids, mask, segments = (np.array([f[i] for f in features]) for i in (6, 7, 8))
    layers, _ = numpy_bert.bert(weights, config, ids, mask, segments)
    logits = layers[-1] @ weights["cls/squad/output_weights"].T.astype(np.float64) + weights["cls/squad/output_bias"]
    predictions, nbest = _json(out / "predictions.json"), _json(out / "nbest_predictions.json")
    assert list(predictions) == [e[0] for e in examples]
    for index, example in enumerate(examples):
        items = [
            (types.SimpleNamespace(tokens=f.tokens, token_to_orig_map=f.token_to_orig_map,
                                   token_is_max_context=f.token_is_max_context), logits[k, :, 0], logits[k, :, 1])
            for k, f in enumerate(features) if f[1] == index
        ]
        text, entries, _ = reference_predictions(example[2], items, 5, 5, False, 0.0)
        assert predictions[example[0]] == text
        assert [e["text"] for e in nbest[example[0]]] == [t for t, _, _ in entries]
        np.testing.assert_allclose([[e["start_logit"], e["end_logit"]] for e in nbest[example[0]]],
                                   [[s, e] for _, s, e in entries], atol=1e-4)


def test_bad_lora_settings_fail_before_any_work(tmp_path, model_dir):
    # run_squad defines its own run flags: the LoRA flags are there too, checked as in every fine-tuning script.
    train = write_squad(tmp_path / "train-v1.1.json", 8)
    cases = [_flags(model_dir, tmp_path / "a", do_train=True, train_file=train, lora_rank=-2),
             _flags(model_dir, tmp_path / "b", do_train=True, train_file=train, lora_alpha=4)]
    assert run_main_cases("run_squad", cases) == [
        "run_squad.py: error: --lora_rank=-2 must be a non-negative integer (0: LoRA off)",
        "run_squad.py: error: --lora_alpha=4.0 is given without --lora_rank: LoRA is off",
    ]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _long_contexts(path, out, sizes, seed=0, version="1.1"):
    """`path`'s paragraphs joined into contexts of `sizes` paragraphs each, one question each (the
    first paragraph's; a v2.0 question keeps its impossibility)."""
    paragraphs = [p for a in _json(path)["data"] for p in a["paragraphs"]]
    rng = random.Random(seed)
    joined = []
    for i, size in enumerate(sizes):
        chosen = rng.sample(paragraphs, size)
        context = "\n\n".join(p["context"] for p in chosen)
        qa = dict(chosen[0]["qas"][0], id=f"long{i}")
        for key in ("answers", "plausible_answers"):
            qa[key] = [{"text": a["text"], "answer_start": a["answer_start"]} for a in qa.get(key, [])]
        joined.append({"context": context, "qas": [qa]})
    out.write_text(json.dumps({"version": version, "data": [{"title": "long", "paragraphs": joined}]}))
    return [(p["qas"][0]["id"], p["qas"][0]["question"], p["context"]) for p in joined]


@pytest.mark.parametrize("version", ["1.1", "v2.0"])
def test_the_export_answers_as_run_squad_does_on_contexts_of_any_length(tmp_path, model_dir, version):
    import tensorflow as tf

    v2 = version == "v2.0"
    train = write_squad(tmp_path / "train.json", 64, seed=6, version=version)
    dev = write_squad(tmp_path / "dev.json", 24, seed=7, version=version)
    run = tmp_path / "run"
    result = run_script("run_squad.py", *_flags(model_dir, run, do_train=True, train_file=train,
                                                version_2_with_negative=v2))
    assert result.returncode == 0, result.stderr[-3000:]
    # Contexts of 1 to 24 paragraphs (up to ~650 words): one window to a few dozen.
    questions = _long_contexts(dev, tmp_path / "long.json", [1, 1, 2, 5, 12, 24], version=version)
    predicted = tmp_path / "predicted"
    result = run_script("run_squad.py", *_flags(model_dir, predicted, do_predict=True,
                                                predict_file=tmp_path / "long.json", init_checkpoint=run,
                                                version_2_with_negative=v2))
    assert result.returncode == 0, result.stderr[-3000:]
    # The script's n-best settings (_flags: 5 and 5); its doc stride (8) is the run's.
    serve = served_export("squad", run, tmp_path / "export", "--n_best_size=5", "--max_answer_length=5")
    ids, question, context = zip(*questions, strict=True)
    out = serve(question=tf.constant(question), context=tf.constant(context))
    predictions, nbest = _json(predicted / "predictions.json"), _json(predicted / "nbest_predictions.json")
    answers = [a.decode() for a in out["answer"].numpy()]
    assert answers == [predictions[i] for i in ids]
    assert any(answers) and (not v2 or "" in answers)  # spans found (and, on v2.0, a null answer)
    for row, qid in enumerate(ids):
        size = int(out["nbest_size"][row])
        assert [t.decode() for t in out["nbest_text"][row, :size].numpy()] == [e["text"] for e in nbest[qid]]
        np.testing.assert_allclose(out["nbest_probability"][row, :size], [e["probability"] for e in nbest[qid]],
                                   atol=1e-5)
        if answers[row]:  # its characters in the context
            start, end = int(out["start_char"][row]), int(out["end_char"][row])
            assert " ".join(context[row][start:end].split()) == answers[row]
    if v2:
        odds = _json(predicted / "null_odds.json")
        np.testing.assert_allclose(out["null_score_diff"].numpy(), [odds[i] for i in ids], atol=1e-4)
