"""run_classifier.py as a user runs it: the original's MRPC files and flags, learning, the
original's output files, an exact resume after kill -9, the same predictions on two replicas,
original-layout checkpoints both ways, TFDS, multi-label, regression, and bad inputs."""

import json
import os
import random

import numpy as np
import pytest

from tests.hf_folder import write_folder
from tests.run_scripts.conftest import (
    converted_to_original,
    killed_and_rerun,
    run_main_cases,
    run_script,
    served_export,
)
from tests.tasks.classifier.test_inputs import original_features
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config, write_vocab

# TensorFlow's own name for its frozen-weights switch, spelt here rather than taken from bert_tf.
TENSORFLOWS_SWITCH = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"

pytestmark = pytest.mark.slow

FILL = ["the", "a", "sat", "on", "mat", "red", "blue", "is", "big", "small", "and", "running", "runs"]
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
MRPC_TEST_HEADER = "index\t#1 ID\t#2 ID\t#1 String\t#2 String"


def _sentence(rng, animal):
    words = rng.sample(FILL, 5) + [animal]
    rng.shuffle(words)
    return " ".join(words) + " ."


def write_mrpc(directory, n_train=128, n_dev=41, n_test=29, seed=0):
    """MRPC's layout (Quality, #1 ID, #2 ID, #1 String, #2 String); label 1 iff sentence 1 has
    "cat" (sentence 2's animal is noise). Returns the test rows' (index, text_a, text_b)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    test_rows = []
    for name, n in (("train", n_train), ("dev", n_dev), ("test", n_test)):
        lines = [MRPC_TEST_HEADER if name == "test" else MRPC_HEADER]
        for i in range(n):
            label = rng.randrange(2)
            a, b = _sentence(rng, "cat" if label else "dog"), _sentence(rng, rng.choice(["cat", "dog"]))
            first = str(3000 + i) if name == "test" else str(label)
            lines.append(f"{first}\t{i}\t{5000 + i}\t{a}\t{b}")
            if name == "test":
                test_rows.append((str(3000 + i), a, b))
        (directory / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return test_rows


@pytest.fixture
def model_dir(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "bert_config.json").write_text(json.dumps(tiny_config().to_dict()))
    write_vocab(d / "vocab.txt", VOCAB)
    return d


def _flags(model_dir, data_dir, out, **overrides):
    values = dict(
        task_name="MRPC", do_train=True, do_eval=True, do_predict=True, data_dir=data_dir,
        vocab_file=model_dir / "vocab.txt", bert_config_file=model_dir / "bert_config.json",
        max_seq_length=24, train_batch_size=16, learning_rate=3e-3, num_train_epochs=10,
        save_checkpoints_steps=16, output_dir=out, iterations_per_loop=16,
    )
    values.update(overrides)
    return [f"--{k}={v}" for k, v in values.items() if v is not None] + ["--noprogress"]


def _resumes_alike(model_dir, data, out, straight, flags):
    """kill -9 mid-training into `out`, then the same command: it resumes and ends with
    `straight`'s test_results.tsv, byte for byte."""
    again = killed_and_rerun("run_classifier.py", _flags(model_dir, data, out, **flags), out)
    assert "Training resumed from" in again.stderr
    assert (out / "test_results.tsv").read_text() == (straight / "test_results.tsv").read_text()
    return again


def _results(out):
    return dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())


def _probabilities(out, name="test_results.tsv"):
    return np.array([[float(v) for v in line.split("\t")] for line in (out / name).read_text().splitlines()])


def test_learns_writes_the_originals_outputs_resumes_exactly_and_predicts_alike_on_two_replicas(tmp_path, model_dir):
    data = tmp_path / "MRPC"
    test_rows = write_mrpc(data)
    # 30 epochs (240 steps): the rule learnt, and the kill below (at the first checkpoint, step 16)
    # lands mid-training. XLA off, as on any machine without a measured choice, whatever the
    # machine (a GPU would turn it on).
    flags = dict(num_train_epochs=30, jit_compile=False)
    straight = tmp_path / "straight"
    result = run_script("run_classifier.py", *_flags(model_dir, data, straight, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    # No XLA: batches cut to their exact longest, and said.
    assert "length_bucket=1: the default without XLA" in result.stderr
    assert "skip_padding=True: the default with length_bucket=1, jit_compile=False on cpu" in result.stderr
    results = _results(straight)
    assert set(results) == {"eval_accuracy", "eval_f1", "eval_loss", "global_step", "loss"}
    assert results["global_step"] == "240" and float(results["eval_accuracy"]) > 0.9
    probabilities = _probabilities(straight)
    assert probabilities.shape == (29, 2)  # one line per test example, none dropped
    np.testing.assert_allclose(probabilities.sum(1), 1.0, atol=1e-5)
    submission = (straight / "MRPC.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction"
    assert [line.split("\t")[0] for line in submission[1:]] == [index for index, _, _ in test_rows]
    predicted = [line.split("\t")[1] for line in submission[1:]]
    assert predicted == [str(int(p[1] > p[0])) for p in probabilities]
    # The test set's labels (by construction): the model found the rule.
    truth = ["1" if "cat" in a.split() else "0" for _, a, _ in test_rows]
    assert np.mean([p == t for p, t in zip(predicted, truth, strict=True)]) > 0.9
    assert json.loads((straight / "fine_tuning_task.json").read_text())["labels"] == ["0", "1"]

    # kill -9 mid-training, then the same command: it resumes and ends bit-identical.
    resumed = tmp_path / "resumed"
    again = killed_and_rerun("run_classifier.py", _flags(model_dir, data, resumed, **flags), resumed)
    assert "Training resumed from" in again.stderr
    assert "ckpt-240" not in again.stderr.split("Training resumed from")[1].split("\n")[0]
    assert _results(resumed) == results
    assert (resumed / "test_results.tsv").read_text() == (straight / "test_results.tsv").read_text()

    # Two replicas (the CPU split in two), eval and predict batches split between them, each cut
    # to its own length (buckets of 4; the default 32 leaves max_seq_length 24 whole): the same
    # figures and every prediction in input order.
    mirrored = tmp_path / "mirrored"
    result = run_script(
        "run_classifier.py",
        *_flags(model_dir, data, mirrored, do_train=False, init_checkpoint=straight / "ckpt-240", num_cpu_devices=2,
                distribution_strategy="mirrored", eval_batch_size=6, predict_batch_size=4, length_bucket=4),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "with 2 replica(s)" in result.stderr
    assert float(_results(mirrored)["eval_accuracy"]) == pytest.approx(float(results["eval_accuracy"]))
    np.testing.assert_allclose(_probabilities(mirrored), probabilities, atol=1e-5)
    # The original's fixed shapes, on the same batches (the original's `loss` is a mean of batch
    # means): the same files. No --vocab_file or --bert_config_file: the run's own, beside its checkpoint.
    fixed = tmp_path / "fixed"
    result = run_script(
        "run_classifier.py", *_flags(model_dir, data, fixed, do_train=False, init_checkpoint=straight / "ckpt-240",
                                     eval_batch_size=6, predict_batch_size=4, pad_to_max_seq_length=True,
                                     vocab_file=None, bert_config_file=None),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for key in ("eval_accuracy", "eval_f1", "eval_loss", "loss"):
        assert float(_results(fixed)[key]) == pytest.approx(float(_results(mirrored)[key]), abs=1e-5), key
    np.testing.assert_allclose(_probabilities(fixed), _probabilities(mirrored), atol=1e-5)
    assert (fixed / "MRPC.tsv").read_text() == (mirrored / "MRPC.tsv").read_text()

    # The finished run evaluated with another casing than it was trained with: refused.
    result = run_script("run_classifier.py", *_flags(model_dir, data, straight, do_train=False, do_lower_case=False))
    assert result.returncode == 1
    assert "but the model in --output_dir" in result.stderr and "fine-tuned with --do_lower_case=True" in result.stderr

    # Our checkpoint written back in the original layout, and read again from it.
    original = tmp_path / "original" / "bert_model.ckpt"
    shapes = converted_to_original(straight, original)
    assert shapes["output_weights"] == [2, 32] and shapes["output_bias"] == [2]
    reread = tmp_path / "reread"
    result = run_script(
        "run_classifier.py", *_flags(model_dir, data, reread, do_train=False, do_eval=False, init_checkpoint=original)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(_probabilities(reread), probabilities, atol=1e-5)


def _run_cases(cases, mock=0):
    return run_main_cases("run_classifier", cases, mock)


def test_an_original_fine_tuned_checkpoint_predicts_what_the_original_computes(tmp_path, model_dir):
    """Google's layout with run_classifier's top-level output_weights/output_bias (and Adam slots):
    test_results.tsv = softmax(pooled . W^T + b) of a numpy BERT on the original's features."""
    config = tiny_config()
    weights = random_weights(original_shapes(config, with_heads=False), seed=5)
    weights["output_weights"] = np.random.default_rng(6).normal(0, 0.5, (2, 32)).astype(np.float32)
    weights["output_bias"] = np.array([0.1, -0.2], np.float32)
    slots = {f"{k}/adam_m": np.zeros_like(v) for k, v in weights.items()}
    ckpt = write_tf1_checkpoint(tmp_path / "mrpc_finetuned" / "model.ckpt-343", {**weights, **slots})
    # The same model as transformers' BertForSequenceClassification folder: no --bert_config_file or
    # --vocab_file (the folder's); and a run started from a pre-trained folder, which leaves its files.
    hf_tuned = write_folder(tmp_path / "hf_tuned", weights, config, "BertForSequenceClassification", vocab=VOCAB,
                            id2label={"0": "0", "1": "1"})
    pre = random_weights(original_shapes(config), seed=7)
    hf_pre = write_folder(tmp_path / "hf_pre", pre, config, "BertForPreTraining", vocab=VOCAB)
    from_hf = dict(vocab_file=None, bert_config_file=None)
    data = tmp_path / "MRPC"
    test_rows = write_mrpc(data, n_test=11)
    out, out_hf, trained = tmp_path / "out", tmp_path / "out_hf", tmp_path / "trained"
    assert _run_cases([
        _flags(model_dir, data, out, do_train=False, do_eval=False, init_checkpoint=ckpt),
        _flags(model_dir, data, out_hf, do_train=False, do_eval=False, init_checkpoint=hf_tuned, **from_hf),
        _flags(model_dir, data, trained, do_eval=False, do_predict=False, num_train_epochs=1, init_checkpoint=hf_pre,
               **from_hf),
    ]) == ["ok"] * 3
    np.testing.assert_array_equal(_probabilities(out_hf), _probabilities(out))
    assert (trained / "vocab.txt").read_text() == (hf_pre / "vocab.txt").read_text()
    assert json.loads((trained / "bert_config.json").read_text()) == config.to_dict()

    from bert_tf.tokenization import FullTokenizer
    from tests import numpy_bert

    tokenizer = FullTokenizer(str(model_dir / "vocab.txt"))
    packed = [original_features(tokenizer, a, b, 24) for _, a, b in test_rows]
    ids, mask, segments = (np.array([p[i] for p in packed]) for i in range(3))
    _, pooled = numpy_bert.bert(weights, config, ids, mask, segments)
    logits = pooled @ weights["output_weights"].T.astype(np.float64) + weights["output_bias"]
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(_probabilities(out), expected, atol=1e-5)


def test_bad_input_fails_before_training_naming_the_file_flag_or_value(tmp_path, model_dir):
    data = tmp_path / "MRPC"
    write_mrpc(data, n_train=8, n_dev=4, n_test=3)
    bad = {}
    for name, lines in {
        "missing_dev": None,
        "empty": [],
        "columns": [MRPC_HEADER, "1\t1\t2\tthe cat\ta dog", "0\t3\t4\tthe dog"],
        "label": [MRPC_HEADER, "1\t1\t2\tthe cat\ta dog", "2\t3\t4\tthe dog\ta cat"],
    }.items():
        d = tmp_path / name
        d.mkdir()
        (d / "train.tsv").write_text((data / "train.tsv").read_text())
        if lines is not None:
            (d / "train.tsv").write_text("\n".join(lines) + ("\n" if lines else ""))
            (d / "dev.tsv").write_text((data / "dev.tsv").read_text())
        bad[name] = d
    big_vocab = tmp_path / "big_vocab.txt"
    write_vocab(big_vocab, VOCAB + [f"extra{i}" for i in range(5)])
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    other_task = tmp_path / "other_task"
    other_task.mkdir()
    (other_task / "fine_tuning_task.json").write_text(
        json.dumps({"task_name": "cola", "label_kind": "single", "labels": ["0", "1"]})
    )

    # Hugging Face folders: one we cannot compute, one cased, one without vocab.txt, one in PyTorch's format.
    weights = random_weights(original_shapes(tiny_config()), seed=1)
    hf = {name: write_folder(tmp_path / f"hf_{name}", weights, tiny_config(), "BertForPreTraining", vocab=VOCAB,
                             **fields)
          for name, fields in (("relative", {"position_embedding_type": "relative_key"}),
                               ("cased", {"do_lower_case": False}), ("no_vocab", {}), ("torch", {}))}
    os.remove(hf["no_vocab"] / "vocab.txt")
    os.rename(hf["torch"] / "model.safetensors", hf["torch"] / "pytorch_model.bin")
    from_hf = dict(vocab_file=None, bert_config_file=None)
    small_config = tmp_path / "small_config.json"
    small_config.write_text(json.dumps(tiny_config(intermediate_size=48).to_dict()))

    pretraining_dir = tmp_path / "pretraining_run"  # checkpoints without a fine-tuning record
    import tensorflow as tf

    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=tf.Variable(1)), str(pretraining_dir), 1)
    manager.save(checkpoint_number=5)
    narrower_run = tmp_path / "narrower_run"  # this task's run, its checkpoints of another config
    tf.train.CheckpointManager(tf.train.Checkpoint(step=tf.Variable(1)), str(narrower_run), 1).save(5)
    (narrower_run / "bert_config.json").write_text(json.dumps(tiny_config(intermediate_size=48).to_dict()))
    (narrower_run / "fine_tuning_task.json").write_text(json.dumps({
        "kind": "classifier", "task_name": "mrpc", "label_kind": "single", "labels": ["0", "1"],
        "do_lower_case": True, "max_seq_length": 24}))

    def out(i):
        return tmp_path / f"out{i}"

    cases = [
        (
            dict(do_train=False, do_eval=False, do_predict=False),
            "At least one of `do_train`, `do_eval` or `do_predict' must be True",
        ),
        (dict(task_name="nope"), "unknown task 'nope'; known tasks: cola, mnli, mnli-mm, mrpc, multilabel"),
        (dict(data_dir=bad["missing_dev"], do_predict=False), "no dev file 'dev.tsv' in data_dir"),
        (dict(data_dir=bad["empty"], do_predict=False), "train.tsv: no examples"),
        (dict(data_dir=bad["columns"], do_predict=False), "train.tsv:3: 4 tab-separated columns, expected 5"),
        (dict(data_dir=bad["label"], do_predict=False), "train.tsv:3: label '2' is not one of task mrpc's labels"),
        (
            dict(max_seq_length=64),
            "Cannot use sequence length 64 because the BERT model was only trained up to sequence length 24",
        ),
        (dict(vocab_file=big_vocab), "has 30 tokens but the model's vocab_size is 25"),
        (
            dict(do_lower_case=False, init_checkpoint="/x/uncased_L-12_H-768_A-12/bert_model.ckpt"),
            "seems to be a lowercased model",
        ),
        (dict(do_train=False), "nothing to evaluate or predict with"),
        (dict(data_dir=None), "--data_dir (the task's files) or --tfds_name (tensorflow-datasets) is required"),
        (dict(output_dir=a_file), "is a file, not a folder"),
        (dict(output_dir=a_file / "run"), "which is a file, not a folder"),
        (dict(output_dir=other_task), "holds a run of task 'cola'"),
        (dict(output_dir=hf["cased"]), f"--output_dir={hf['cased']} holds a Hugging Face model (config.json, "
                                       "model.safetensors, tokenizer_config.json), not a run of bert_tf"),
        (dict(task_name="multilabel"), "needs the option(s) labels_file (--labels_file)"),
        (dict(train_batch_size=0), "--train_batch_size must be a positive integer, got 0"),
        (dict(eval_batch_size=0), "--eval_batch_size must be a positive integer, got 0"),
        (dict(save_checkpoints_steps=0), "--save_checkpoints_steps must be a positive integer, got 0"),
        (dict(learning_rate=-1), "--learning_rate must not be negative, got -1.0"),
        (dict(warmup_proportion=2), "--warmup_proportion=2.0 must be between 0 and 1"),
        (dict(length_bucket=0), "--length_bucket=0 must be a positive integer"),
        (dict(skip_padding=True, jit_compile=True), "--skip_padding needs jit_compile off"),
        (dict(use_tpu=True, pad_to_max_seq_length=False), "--pad_to_max_seq_length=false is not possible with"),
        (dict(init_checkpoint=tmp_path / "nowhere" / "bert_model.ckpt"), "cannot read a TensorFlow checkpoint at"),
        (dict(output_dir=pretraining_dir), "holds checkpoints of another kind of run (no fine_tuning_task.json)"),
        (dict(output_dir=narrower_run), f"--bert_config_file={model_dir / 'bert_config.json'}: its intermediate_size "
         f"is 64, but the model in --output_dir={narrower_run} was fine-tuned with 48 "
         f"({narrower_run}/bert_config.json): give that config, or use another --output_dir"),
        (dict(task_module="no_such_module_here"), "--task_module=no_such_module_here: ModuleNotFoundError"),
        (
            dict(init_checkpoint=hf["relative"], **from_hf),
            "--init_checkpoint: " + str(hf["relative"] / "config.json") + ": position_embedding_type='relative_key' "
            "is not supported (only 'absolute')",
        ),
        (
            dict(init_checkpoint=hf["cased"], do_lower_case=True, **from_hf),
            f"--do_lower_case=True, but {hf['cased'] / 'tokenizer_config.json'} has do_lower_case=False",
        ),
        (dict(init_checkpoint=hf["no_vocab"], **from_hf), "--vocab_file is required ("),
        (
            dict(init_checkpoint=hf["cased"], bert_config_file=small_config, vocab_file=None),
            f"--bert_config_file={small_config}: it does not match the Hugging Face folder's config.json: "
            "intermediate_size 48 vs 64",
        ),
        (dict(init_checkpoint=hf["torch"], **from_hf), "holds pytorch_model.bin only, which needs PyTorch to read"),
    ]
    argvs = []
    for i, (overrides, _) in enumerate(cases):
        values = {"data_dir": data, "output_dir": out(i)} | overrides
        argvs.append(_flags(model_dir, values.pop("data_dir"), values.pop("output_dir"), **values))
    outcomes = _run_cases(argvs)
    for (overrides, message), outcome, i in zip(cases, outcomes, range(len(cases)), strict=True):
        assert message in outcome, (overrides, outcome)
        assert outcome.startswith("run_classifier.py: error: ")
        assert not os.path.exists(out(i) / "checkpoint")
        assert not os.path.exists(out(i) / "fine_tuning_task.json")  # a failed start leaves nothing
    # A subprocess as a user sees it: exit status 1 and the one line. Here the environment is at fault,
    # TensorFlow's frozen-weights switch for serving, where training would not see its own updates; it is
    # checked before anything is read or written: the bad label file is never reached, and the search (a
    # list of learning rates) writes no folder.
    searched = _flags(model_dir, bad["label"], out(99), learning_rate="3e-3,1e-3")
    result = run_script("run_classifier.py", *searched, env={TENSORFLOWS_SWITCH: "1"})
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        "run_classifier.py: error: TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 is set in this environment: TensorFlow's oneDNN "
        "products then keep the weights of their first call, so training would not see its own updates. Unset it "
        "to train (it is for processes that only serve exports)"
    )
    assert not os.path.exists(out(99))
    # Without a checkpoint that has a config (a Hugging Face folder's, one beside it), --bert_config_file is
    # required as before (absl's check and words).
    result = run_script("run_classifier.py", *_flags(model_dir, data, out(98), bert_config_file=None))
    assert result.returncode == 1 and "Flag --bert_config_file must have a value other than None." in result.stderr


def test_tfds_regression_and_multi_label_tasks_write_their_metrics_and_predictions(tmp_path, model_dir):
    labels = tmp_path / "labels.txt"
    labels.write_text("animal\ncolour\nsize\n")
    multi = tmp_path / "multi"
    multi.mkdir()
    rng = random.Random(1)
    for name, n in (("train", 48), ("dev", 13), ("test", 7)):
        lines = ["id\ttext_a\tlabels"]
        for i in range(n):
            words, tags = rng.sample(FILL, 4), []
            for tag, word in (("animal", "cat"), ("colour", "red"), ("size", "big")):
                if rng.random() < 0.5:
                    tags.append(tag)
                    words.append(word)
            lines.append(f"m{i}\t{' '.join(words)}\t{','.join(tags)}")
        (multi / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    common = dict(train_batch_size=8, num_train_epochs=1, max_seq_length=16)
    cases = [
        _flags(model_dir, None, tmp_path / "sst2", task_name=None, tfds_name="glue/sst2", **common),
        # With the progress bar (a regression task logs no accuracy).
        _flags(model_dir, None, tmp_path / "stsb", task_name="sts-b", tfds_name="glue/stsb", **common) + ["--progress"],
        _flags(model_dir, None, tmp_path / "mnli", task_name=None, tfds_name="glue/mnli", **common),
        _flags(model_dir, multi, tmp_path / "multi_out", task_name="multilabel", labels_file=labels, **common),
    ]
    # Predicting mnli-mm with the mnli run (the same head); a task of the user's, from a file.
    cases.append(
        _flags(
            model_dir, None, tmp_path / "mnli", task_name="mnli-mm", tfds_name="glue/mnli", do_train=False,
            do_eval=False,
        )
    )
    user_tasks = tmp_path / "user_tasks.py"
    user_tasks.write_text(
        "from bert_tf.tasks.classifier.processors import TsvFile, TsvTask, register_task\n"
        "@register_task('animals')\n"
        "class Animals(TsvTask):\n"
        "    labels = ['0', '1']\n"
        "    train_file = TsvFile('train.tsv', text_a=3, text_b=4, label=0)\n"
        "    dev_file = train_file.at('dev.tsv')\n"
        "    test_file = TsvFile('test.tsv', text_a=3, text_b=4, index=0)\n"
    )
    write_mrpc(tmp_path / "animals", n_train=16, n_dev=5, n_test=3)
    cases.append(
        _flags(
            model_dir, tmp_path / "animals", tmp_path / "user", task_name="animals", task_module=user_tasks, **common
        )
    )
    assert _run_cases(cases, mock=12) == ["ok"] * 6
    assert _probabilities(tmp_path / "mnli", "test_results.tsv").shape == (12, 3)  # mnli-mm's test: the mismatched set
    assert _probabilities(tmp_path / "user").shape == (3, 2) and (tmp_path / "user" / "test_predictions.tsv").exists()

    sst2 = _results(tmp_path / "sst2")
    assert set(sst2) == {"eval_accuracy", "eval_loss", "global_step", "loss"} and sst2["global_step"] == "1"
    assert _probabilities(tmp_path / "sst2").shape == (12, 2)
    assert (tmp_path / "sst2" / "SST-2.tsv").read_text().startswith("index\tprediction\n")

    stsb = _results(tmp_path / "stsb")
    assert set(stsb) == {"eval_pearson", "eval_spearman", "eval_loss", "global_step", "loss"}
    assert _probabilities(tmp_path / "stsb").shape == (12, 1)  # the predicted score

    mnli = _results(tmp_path / "mnli")  # matched, then mismatched
    assert {"eval_accuracy", "eval_mismatched_accuracy", "eval_mismatched_loss", "mismatched_loss"} <= set(mnli)
    for name in ("test_results.tsv", "test_results_mismatched.tsv"):
        assert _probabilities(tmp_path / "mnli", name).shape == (12, 3)
    assert (tmp_path / "mnli" / "MNLI-m.tsv").exists() and (tmp_path / "mnli" / "MNLI-mm.tsv").exists()

    multi_results = _results(tmp_path / "multi_out")
    assert {"eval_accuracy", "eval_micro_f1", "eval_macro_f1", "eval_loss"} <= set(multi_results)
    probabilities = _probabilities(tmp_path / "multi_out")
    assert probabilities.shape == (7, 3) and ((probabilities > 0) & (probabilities < 1)).all()
    rows = (tmp_path / "multi_out" / "test_predictions.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and [r.split("\t")[0] for r in rows[1:]] == [f"m{i}" for i in range(7)]
    names = ["animal", "colour", "size"]
    for row, p in zip(rows[1:], probabilities, strict=True):
        assert row.split("\t")[1] == ",".join(n for n, q in zip(names, p, strict=True) if q > 0.5)


def test_lora_learns_resumes_exactly_after_kill_and_exports_merged(tmp_path, model_dir):
    import tensorflow as tf

    data = tmp_path / "MRPC"
    write_mrpc(data)
    flags = dict(num_train_epochs=30, lora_rank=4, do_eval=False)  # 240 steps
    straight = tmp_path / "straight"
    result = run_script("run_classifier.py", *_flags(model_dir, data, straight, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    # Adapters of rank 4 on 6 layers of 2 blocks (3,584 numbers) and the head (66) train.
    assert "Trainable parameters: 3,650 of 23,490 (15.54%)" in result.stderr
    record = json.loads((straight / "fine_tuning_task.json").read_text())
    assert (record["lora_rank"], record["lora_alpha"]) == (4, 4.0)
    probabilities = _probabilities(straight)
    truth = [int("cat" in line.split("\t")[3].split()) for line in (data / "test.tsv").read_text().splitlines()[1:]]
    assert np.mean(probabilities.argmax(1) == truth) > 0.9

    _resumes_alike(model_dir, data, tmp_path / "resumed", straight, flags)

    # The export needs nothing of LoRA: plain weights, the run's predictions.
    served = tmp_path / "served"
    serve = served_export("classifier", straight, served)
    assert not [name for name, _ in tf.train.list_variables(str(served / "variables" / "variables")) if "lora" in name]
    rows = [line.split("\t") for line in (data / "test.tsv").read_text().splitlines()[1:]]
    out = serve(text_a=tf.constant([r[3] for r in rows]), text_b=tf.constant([r[4] for r in rows]))
    np.testing.assert_allclose(out["probabilities"].numpy(), probabilities, atol=1e-5)
    # A stride is for a run that reads windows; this one cut its texts.
    result = run_script("export_saved_model.py", "--export_type=classifier", f"--init_checkpoint={straight}",
                        f"--export_dir={tmp_path / 'strided'}", "--doc_stride=4")
    assert result.returncode == 1 and not (tmp_path / "strided").exists()
    assert result.stderr.strip().splitlines()[-1] == (
        "export_saved_model.py: error: --doc_stride=4 is for a run that reads windows; this run cut its texts "
        "(max_windows 1)")

    # Bad LoRA settings: one line naming the flag, before any work.
    cases = [
        (dict(lora_rank=-1), "--lora_rank=-1 must be a non-negative integer (0: LoRA off)"),
        (dict(lora_alpha=8), "--lora_alpha=8.0 is given without --lora_rank: LoRA is off"),
        (dict(lora_rank=2, lora_alpha=0), "--lora_alpha=0.0 must be positive"),
        (dict(output_dir=straight, do_train=False), "--lora_rank=0, but the model in --output_dir="),
        # At the width of the adapted layers (hidden 32), A and B would hold more than the kernels.
        (dict(lora_rank=32), "--lora_rank=32 is not below hidden_size 32, the smallest dimension of the adapted "
         "layers: the adapters would train more numbers than the layers hold (full fine-tuning: --lora_rank=0)"),
        # Training goes on only with the length the run's steps so far were taken at (its record says it).
        (dict(output_dir=straight, lora_rank=4, max_seq_length=16),
         f"--output_dir={straight} holds a run of task 'mrpc' with --max_seq_length 24, not 16: use another "
         "--output_dir"),
    ]
    argvs = [_flags(model_dir, data, values.pop("output_dir", tmp_path / f"bad{i}"), **values)
             for i, (values, _) in enumerate(cases)]
    for (_, message), outcome, i in zip(cases, _run_cases(argvs), range(len(cases)), strict=True):
        assert outcome.startswith("run_classifier.py: error: ") and message in outcome, outcome
        assert not (tmp_path / f"bad{i}").exists()


# Texts longer than the window: the label is decided by "cat" or "dog" at a random place. Words
# of one piece each, so that a text's pieces are its words.
LONG_FILL = [w for w in FILL if not w.startswith("run")]


def _long_text(rng, words, animal=None):
    text = [rng.choice(LONG_FILL) for _ in range(words)]
    if animal:
        text[rng.randrange(words)] = animal
    return " ".join(text)


def write_long_sst2(directory, seed=0, n_train=96, n_dev=32, test_words=(1, 3, 5, 30, 300, 5000)):
    """SST-2's layout; each train/dev text 25 to 45 words with its label's animal somewhere in it.
    The test texts have `test_words` words each (the short ones fit one window of 12)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for name, n in (("train", n_train), ("dev", n_dev)):
        rows = []
        for _ in range(n):
            label = rng.randrange(2)
            rows.append(f"{_long_text(rng, rng.randrange(25, 46), 'cat' if label else 'dog')}\t{label}")
        (directory / f"{name}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    test = [_long_text(rng, n, rng.choice(["cat", "dog"])) for n in test_words]
    lines = [f"{i}\t{text}" for i, text in enumerate(test)]
    (directory / "test.tsv").write_text("index\tsentence\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return test


def test_long_texts_are_read_as_windows_learnt_resumed_exported_and_served_at_any_length(tmp_path, model_dir):
    import tensorflow as tf

    data = tmp_path / "LONG"
    test_texts = write_long_sst2(data)
    # 12 positions: 10 pieces a window, 5 apart; a text of 5,000 words takes 999 windows.
    flags = dict(task_name="SST-2", max_seq_length=12, max_windows=1000, doc_stride=5, num_train_epochs=30,
                 train_batch_size=8, save_checkpoints_steps=48, predict_batch_size=2)
    straight = tmp_path / "straight"
    result = run_script("run_classifier.py", *_flags(model_dir, data, straight, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    # 1, 1, 1, 5, 59 and 999 windows.
    assert "test: 6 texts in 1066 windows (at most 999); 0 cut at --max_windows=1000" in result.stderr
    # The animal is past the first window in most texts: the windows read it.
    assert float(_results(straight)["eval_accuracy"]) > 0.9
    probabilities = _probabilities(straight)
    assert probabilities.shape == (6, 2)  # one row per text
    record = json.loads((straight / "fine_tuning_task.json").read_text())
    assert (record["max_windows"], record["doc_stride"], record["window_pooling"]) == (1000, 5, "max")

    # kill -9 mid-training, then the same command: it resumes and ends bit-identical.
    _resumes_alike(model_dir, data, tmp_path / "resumed", straight, flags)

    # The export reads texts of 1 to 5,000 words as the script did.
    out = served_export("classifier", straight, tmp_path / "served")(text_a=tf.constant(test_texts))
    np.testing.assert_allclose(out["probabilities"].numpy(), probabilities, atol=1e-5)
    assert out["windows"].numpy().tolist() == [1, 1, 1, 5, 59, 999]

    # The trained model read with one window: the texts that fit it get the same probabilities.
    # With two, the texts past them are cut and counted.
    checkpoint = straight / f"ckpt-{_results(straight)['global_step']}"
    for max_windows, line in ((1, None), (2, "test: 6 texts in 9 windows (at most 2); 3 cut at --max_windows=2")):
        cut = tmp_path / f"cut{max_windows}"
        result = run_script("run_classifier.py", *_flags(model_dir, data, cut, **{
            **flags, "do_train": False, "do_eval": False, "init_checkpoint": checkpoint, "max_windows": max_windows}))
        assert result.returncode == 0, result.stderr[-3000:]
        np.testing.assert_allclose(_probabilities(cut)[:3], probabilities[:3], atol=1e-6)
        assert line is None or line in result.stderr

    # Two replicas (the CPU split in two), each windowing its own texts: the same predictions.
    mirrored = tmp_path / "mirrored"
    result = run_script("run_classifier.py", *_flags(model_dir, data, mirrored, **{
        **flags, "do_train": False, "init_checkpoint": checkpoint, "num_cpu_devices": 2,
        "distribution_strategy": "mirrored", "eval_batch_size": 6, "predict_batch_size": 4}))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "with 2 replica(s)" in result.stderr
    assert float(_results(mirrored)["eval_accuracy"]) == pytest.approx(float(_results(straight)["eval_accuracy"]))
    np.testing.assert_allclose(_probabilities(mirrored), probabilities, atol=1e-5)


def test_long_texts_train_with_lora_in_a_search_whose_best_run_keeps_the_windows(tmp_path, model_dir):
    data = tmp_path / "LONG"
    write_long_sst2(data, n_train=24, n_dev=8, test_words=(3, 40))
    out = tmp_path / "search"
    flags = dict(task_name="SST-2", max_seq_length=12, max_windows=6, doc_stride=5, window_pooling="mean",
                 num_train_epochs=2, train_batch_size=8, learning_rate="3e-3,1e-3", lora_rank=2, do_predict=True)
    result = run_script("run_classifier.py", *_flags(model_dir, data, out, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "train: 24 texts in" in result.stderr and "Trainable parameters:" in result.stderr
    best = out / "best"
    record = json.loads((best / "fine_tuning_task.json").read_text())
    assert (record["max_windows"], record["doc_stride"], record["window_pooling"], record["lora_rank"]) == (
        6, 5, "mean", 2)
    assert _probabilities(best).shape == (2, 2)
    # Bad window settings: one line naming the flag, before any work.
    outcomes = _run_cases([_flags(model_dir, data, tmp_path / "bad", task_name="SST-2", max_windows=0),
                           _flags(model_dir, data, tmp_path / "bad", task_name="SST-2", max_windows=2, doc_stride=0),
                           _flags(model_dir, data, tmp_path / "bad", task_name="SST-2", max_windows=2,
                                  max_seq_length=3),
                           _flags(model_dir, data, tmp_path / "bad", task_name="SST-2", max_windows=2, use_tpu=True)])
    # Predicting from the windowed run with one window: said in the log.
    result = run_script("run_classifier.py", *_flags(model_dir, data, tmp_path / "one", task_name="SST-2",
                                                     do_train=False, do_eval=False, do_predict=True,
                                                     init_checkpoint=best, max_seq_length=12))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "read up to --max_windows=6 windows of a text; this run reads one and cuts longer texts" in result.stderr
    # A window setting given without windows does nothing, and the log says so.
    result = run_script("run_classifier.py", *_flags(model_dir, data, tmp_path / "idle", task_name="SST-2",
                                                     do_train=False, do_eval=False, do_predict=True,
                                                     init_checkpoint=best, max_seq_length=12, doc_stride=4))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--doc_stride: read only with --max_windows above 1; this run cuts its texts" in result.stderr
    assert outcomes == [
        "run_classifier.py: error: --max_windows=0 must be a whole number of at least 1",
        "run_classifier.py: error: --doc_stride=0 must be a whole number of at least 1",
        "run_classifier.py: error: --max_seq_length=3: windows need at least 4 positions, room for a pair's [CLS] A "
        "[SEP] B [SEP]",
        "run_classifier.py: error: --max_windows=2 is not offered with --use_tpu: a batch's windows vary in number, "
        "and a TPU program takes one shape"]
    assert not (tmp_path / "bad").exists()
