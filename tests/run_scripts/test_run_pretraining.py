import json
import os
import re
import subprocess
import sys
import time

import pytest
from safetensors.numpy import save_file

from tests import warm_scripts
from tests.hf_folder import pytorch_tensors, write_folder
from tests.run_scripts.conftest import REPO, run_script
from tests.run_scripts.script_cases import run_cases
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config
from tests.training.test_pretraining import write_records

pytestmark = pytest.mark.slow


def _setup(tmp_path):
    config = tiny_config()
    config_file = tmp_path / "bert_config.json"
    config_file.write_text(json.dumps(config.to_dict()))
    data, _ = write_records(tmp_path / "train.tfrecord", 64, config.vocab_size)
    return str(config_file), data


def _flags(config_file, data, out, **overrides):
    values = dict(
        input_file=data, output_dir=out, bert_config_file=config_file, do_train=True, do_eval=True,
        train_batch_size=8, eval_batch_size=8, max_seq_length=16, max_predictions_per_seq=4,
        num_train_steps=400, num_warmup_steps=10, learning_rate=1e-3, save_checkpoints_steps=50,
        max_eval_steps=4, steps_per_execution=1,
    )
    values.update(overrides)
    return [f"--{k}={v}" for k, v in values.items() if v is not None] + ["--noprogress"]


def test_killed_run_resumes_with_the_same_command(tmp_path):
    config_file, data = _setup(tmp_path)
    out = tmp_path / "out"
    steps = {"num_train_steps": 150}
    flags = _flags(config_file, data, out, **steps)
    process = warm_scripts.start([os.path.join(REPO, "run_scripts", "run_pretraining.py"), *flags])
    deadline = time.time() + 240
    # The checkpoint state file is written (atomically) after ckpt-50's files: killed before it,
    # the run has no checkpoint yet and rightly starts afresh, so wait for it to test resuming.
    while not (out / "checkpoint").exists():
        assert process.poll() is None, process.read("stderr")[-2000:]
        assert time.time() < deadline
        time.sleep(0.05)
    process.kill()  # SIGKILL, at whatever point it is
    process.wait()
    process.close()
    assert not (out / "eval_results.txt").exists()

    result = run_script("run_pretraining.py", *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Training resumed from" in result.stderr and "ckpt-" in result.stderr
    results = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())
    assert results["global_step"] == "150"
    assert set(results) == {
        "global_step",
        "loss",
        "masked_lm_accuracy",
        "masked_lm_loss",
        "next_sentence_accuracy",
        "next_sentence_loss",
    }
    assert os.path.isdir(out / "train") and os.listdir(out / "train")  # TensorBoard events

    # num_train_steps already reached: the same command just evaluates again.
    again = run_script("run_pretraining.py", *flags)
    assert again.returncode == 0 and "now at step 150" in again.stderr

    # The resumed run ends where an uninterrupted one does: the same eval figures, to the last digit.
    straight = tmp_path / "straight"
    uninterrupted = run_script("run_pretraining.py", *_flags(config_file, data, straight, **steps))
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    assert (straight / "eval_results.txt").read_text() == (out / "eval_results.txt").read_text()


def test_bad_input_fails_before_training_with_one_line(tmp_path):
    """Every case in one process (one TensorFlow start), each with its own output folder, none of
    which may get a checkpoint."""
    config_file, data = _setup(tmp_path)
    small = tmp_path / "small.json"
    small.write_text(json.dumps(tiny_config(vocab_size=6).to_dict()))
    no_layers = tmp_path / "no_layers.json"
    no_layers.write_text(json.dumps({k: v for k, v in tiny_config().to_dict().items() if k != "num_hidden_layers"}))
    text = tmp_path / "corpus.txt"
    text.write_text("The cat sat on the mat.\n" * 40)
    truncated = tmp_path / "truncated.tfrecord"
    truncated.write_bytes(open(data, "rb").read()[:8000])  # its first half, the last record cut short
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    damaged = write_tf1_checkpoint(tmp_path / "damaged.ckpt", random_weights(original_shapes(tiny_config())))
    data_file = tmp_path / "damaged.ckpt.data-00000-of-00001"
    data_file.write_bytes(data_file.read_bytes()[:1000])
    fake_keras = tmp_path / "model.keras"
    fake_keras.write_text("not a zip archive")
    misspelt = tmp_path / "misspelt.json"
    misspelt.write_text(json.dumps({**tiny_config().to_dict(), "hidden_dropout_probs": 0.5}))
    # Hugging Face folders in place of --bert_config_file: a small vocabulary; a masked LM has no NSP head.
    weights = random_weights(original_shapes(tiny_config()))
    hf_small = write_folder(tmp_path / "hf_small", weights, tiny_config(), "BertForPreTraining", vocab_size=6)
    masked_lm = write_folder(tmp_path / "hf_mlm", weights, tiny_config(), "BertForPreTraining",
                             architectures=["BertForMaskedLM"])
    (masked_lm / "model.safetensors").unlink()
    save_file({k: v for k, v in pytorch_tensors(weights, "BertForPreTraining").items() if "seq_relationship" not in k},
              str(masked_lm / "model.safetensors"))
    fine_tuned = tmp_path / "fine_tuned"
    fine_tuned.mkdir()
    (fine_tuned / "fine_tuning_task.json").write_text(json.dumps({"kind": "classifier", "task_name": "mrpc",
                                                                  "labels": ["0", "1"]}))
    cases = [
        ({"max_seq_length": 32}, "has input_ids of length 16, but --max_seq_length=32"),
        ({"do_train": False, "do_eval": False}, "At least one of `do_train` or `do_eval` must be True"),
        (
            {"train_batch_size": 10, "gradient_accumulation_steps": 4},
            r"--train_batch_size=10 is not divisible by 1 replica\(s\) x 4 accumulation step\(s\)",
        ),
        ({"input_file": "/nonexistent/*.tfrecord"}, "matches no file"),
        ({"bert_config_file": small}, r"has token id \d+, but --bert_config_file=.*small.json has vocab_size=6"),
        (
            {"do_train": False},
            r"--output_dir=.* has no checkpoint and no init_checkpoint was given: nothing to evaluate or predict with",
        ),
        ({"train_batch_size": 0}, r"--train_batch_size must be a positive integer, got 0"),
        ({"learning_rate": -1}, r"--learning_rate must not be negative"),
        ({"input_file": text}, r"--input_file: .*corpus.txt is not a TFRecord file"),
        ({"input_file": f"{data},{text}"}, r"--input_file: .*corpus.txt is not a TFRecord file"),  # every file
        ({"eval_input_file": text}, r"--eval_input_file: .*corpus.txt is not a TFRecord file"),
        ({"input_file": tmp_path / "folder"}, r"--input_file: .*folder is a directory, not a file"),
        ({"output_dir": tmp_path / "file"}, r"--output_dir=.*file is a file, not a folder"),
        ({"output_dir": tmp_path / "file" / "run"}, r"--output_dir=.*run is under .*file, which is a file"),
        # Another program's model is never written into (a pre-training folder keeps no record), nor a
        # fine-tuning run's folder (its checkpoints hold a task's model).
        ({"output_dir": masked_lm}, r"--output_dir=.*hf_mlm holds a Hugging Face model \(config.json, "
                                    r"model.safetensors.*\), not a run of bert_tf"),
        ({"output_dir": fine_tuned}, r"--output_dir=.*fine_tuned holds a fine-tuning run \(or search\): its "
                                     r"checkpoints hold a task's model"),
        ({"learning_rate": 0}, r"--learning_rate=0 changes no weight"),
        ({"init_checkpoint": damaged}, r"checkpoint '.*damaged.ckpt' is damaged \(truncated or corrupted"),
        ({"init_checkpoint": fake_keras}, r"--init_checkpoint=.*model.keras is not a Keras model file"),
        ({"bert_config_file": misspelt, "input_file": "/nonexistent/*.tfrecord"}, "matches no file"),  # after a warning
        (
            {"bert_config_file": no_layers},
            r"--bert_config_file: BERT config file .*no_layers.json.*needs 'num_hidden_layers'",
        ),
        # Cut short after its first record: found while reading (a whole-file check up front would
        # read every byte of a corpus), still one line naming the file.
        (
            {"input_file": truncated, "num_train_steps": 40},
            r"reading the input failed: .*truncated.tfrecord is truncated: its record at byte \d+ is cut short",
        ),
        (
            {"bert_config_file": None, "init_checkpoint": hf_small},
            r"has token id \d+, but --init_checkpoint=.*hf_small has vocab_size=6",
        ),
        (
            {"bert_config_file": None, "init_checkpoint": masked_lm, "num_train_steps": 10},
            r"hf_mlm/model.safetensors does not match the model .*: cls.seq_relationship.weight is missing",
        ),
        # A full disk at the first checkpoint (see script_cases).
        (
            {"output_dir": tmp_path / "full.run", "num_train_steps": 10, "save_checkpoints_steps": 5},
            r"writing to --output_dir=.*full.run failed \(rerun the command to resume\): .*File too large",
        ),
    ]
    outcomes, _, stderr = run_cases(
        "run_pretraining",
        [_flags(config_file, data, tmp_path / f"o{i}", **overrides) for i, (overrides, _) in enumerate(cases)],
    )
    for (overrides, message), outcome in zip(cases, outcomes, strict=True):
        assert outcome.startswith("run_pretraining.py: error: ") and re.search(message, outcome), (overrides, outcome)
        assert "\n" not in outcome
    assert not [d for d in os.listdir(tmp_path) if (tmp_path / d / "checkpoint").exists()]
    assert re.search(
        r"--bert_config_file: BERT config file .*misspelt.json' has the unknown key "
        r"'hidden_dropout_probs', one edit away from 'hidden_dropout_prob'",
        stderr,
    )


def test_training_is_refused_where_tensorflow_keeps_its_products_first_weights(tmp_path):
    """TensorFlow's frozen-weights switch, which serving processes may set (README), is refused
    before anything is written: training there would go on multiplying by its first weights."""
    config_file, data = _setup(tmp_path)
    out = tmp_path / "out"
    switch = {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "True"}  # TensorFlow's name, spelt here; any case of true
    result = run_script("run_pretraining.py", *_flags(config_file, data, out), env=switch)
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        "run_pretraining.py: error: TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=True is set in this environment: TensorFlow's "
        "oneDNN products then keep the weights of their first call, so training would not see its own updates. "
        "Unset it to train (it is for processes that only serve exports)"
    )
    assert not out.exists()


def test_no_nsp_trains_the_masked_lm_alone_on_single_segments_and_fine_tuning_starts_from_it(tmp_path):
    """§5.1's "No NSP" from the embedded corpus: single-segment records, pre-training without the
    next-sentence head, then a classifier initialised from the run's checkpoint."""
    from bert_tf import BertClassifier, BertEncoder
    from bert_tf.checkpoints import restore
    from bert_tf.config import BertConfig
    from bert_tf.data.pretraining import creation

    data_dir = os.path.join(REPO, "data")
    records = str(tmp_path / "single.tfrecord")
    config = creation.PretrainingDataConfig(
        vocab_file=os.path.join(data_dir, "vocab.txt"), max_seq_length=64, max_predictions_per_seq=10,
        dupe_factor=1, next_sentence=False,
    )
    creation.run_job(creation.plan_job(config, os.path.join(data_dir, "corpus.txt"), [records]))
    config_file = os.path.join(data_dir, "bert_config_tiny.json")
    out = tmp_path / "out"
    flags = _flags(
        config_file, records, out, max_seq_length=64, max_predictions_per_seq=10, num_train_steps=20,
        save_checkpoints_steps=20, next_sentence_prediction=False,
    )
    result = run_script("run_pretraining.py", *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    results = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())
    assert set(results) == {"global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"}
    assert results["global_step"] == "20"
    # Resumed asking for next-sentence prediction, its head would start untrained at step 20: refused.
    flags[flags.index("--next_sentence_prediction=False")] = "--next_sentence_prediction=True"
    refused = run_script("run_pretraining.py", *flags)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        f"run_pretraining.py: error: --next_sentence_prediction=True, but the checkpoint {out}/ckpt-20 in "
        f"--output_dir={out} was pre-trained without the next-sentence head (--next_sentence_prediction=False): "
        "that head would start untrained; resume with --next_sentence_prediction=False, or use another --output_dir"
    )

    classifier = BertClassifier(BertEncoder.from_bert_config(BertConfig.from_json_file(config_file)), num_classes=2)
    assert restore(classifier, str(out)).not_found == ["the BertClassifier head"]


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_tpu_flags_without_a_reachable_tpu_fail_fast(tmp_path):
    """A grpc:// TPU address where nothing listens: a clear error within seconds (connecting to
    the cluster would otherwise wait forever), before any output is written."""
    config_file, data = _setup(tmp_path)
    address = f"grpc://127.0.0.1:{_free_port()}"
    start = time.time()
    result = run_script(
        "run_pretraining.py", *_flags(config_file, data, tmp_path / "o", use_tpu=True, tpu_name=address)
    )
    assert result.returncode != 0
    assert (
        f"no TPU reachable at tpu_name='{address}'" in result.stderr and "nothing accepts connections" in result.stderr
    ), result.stderr[-2000:]
    assert time.time() - start < 60
    assert not (tmp_path / "o" / "checkpoint").exists()


def test_multi_worker_mirrored_with_two_local_workers(tmp_path):
    config = tiny_config()
    config_file = tmp_path / "bert_config.json"
    config_file.write_text(json.dumps(config.to_dict()))
    files = [write_records(tmp_path / f"part-{i}.tfrecord", 32, config.vocab_size, seed=i)[0] for i in range(2)]
    out = tmp_path / "out"
    cluster = {"worker": [f"localhost:{_free_port()}", f"localhost:{_free_port()}"]}
    flags = _flags(
        str(config_file),
        ",".join(files),
        out,
        num_train_steps=6,
        save_checkpoints_steps=3,
        distribution_strategy="multi_worker_mirrored",
    )
    processes = []
    for index in range(2):
        env = {
            **os.environ,
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}),
        }
        processes.append(
            subprocess.Popen(
                [sys.executable, os.path.join(REPO, "run_scripts", "run_pretraining.py"), *flags],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO,
            )
        )
    errors = [p.communicate(timeout=300)[1].decode() for p in processes]
    assert all(p.returncode == 0 for p in processes), "\n---\n".join(e[-2000:] for e in errors)
    assert "Strategy multi_worker_mirrored with 2 replica(s)" in errors[0]
    assert sorted(f for f in os.listdir(out) if f.endswith(".index")) == ["ckpt-3.index", "ckpt-6.index"]
    assert "global_step = 6" in (out / "eval_results.txt").read_text()
    assert not [f for f in os.listdir(out) if f.startswith(".worker")]  # worker 1's private saves are gone


def test_a_resumed_run_keeps_the_settings_and_kernels_its_steps_were_taken_with(tmp_path):
    config_file, data = _setup(tmp_path)
    out = tmp_path / "out"
    flags = _flags(config_file, data, out, num_train_steps=50, do_eval=False)
    first = run_script("run_pretraining.py", *flags, env={"TF_ENABLE_ONEDNN_OPTS": "0"})
    assert first.returncode == 0, first.stderr[-3000:]
    kept = json.loads((out / "training_settings.json").read_text())
    assert kept["TF_ENABLE_ONEDNN_OPTS"] == "0" and kept["learning_rate"] == 1e-3
    assert kept["input_file"] == [os.path.realpath(data)] and kept["max_predictions_per_seq"] == 4
    # Given nothing, the resumed run takes the kernels its steps were taken with; more steps may follow.
    longer = run_script("run_pretraining.py", *_flags(config_file, data, out, num_train_steps=60, do_eval=False))
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert "Training resumed from" in longer.stderr and "oneDNN off" in longer.stderr
    changed = run_script("run_pretraining.py", *_flags(config_file, data, out, num_train_steps=70,
                                                        learning_rate=2e-3, do_eval=False))
    assert changed.returncode == 1 and changed.stderr.strip().splitlines()[-1] == (
        f"run_pretraining.py: error: --learning_rate=0.002, but the run in --output_dir={out} was trained with "
        "--learning_rate=0.001: a resumed run takes its steps as its first steps were taken; give the same, or use "
        "another --output_dir (what may change on resume: --num_train_steps, --eval_batch_size, --max_eval_steps, "
        "--save_checkpoints_steps, --keep_checkpoints, --jit_compile, --eval_input_file, --do_eval)")
    other_kernels = run_script("run_pretraining.py", *_flags(config_file, data, out, num_train_steps=70,
                                                              do_eval=False), env={"TF_ENABLE_ONEDNN_OPTS": "1"})
    assert other_kernels.returncode == 1 and other_kernels.stderr.strip().splitlines()[-1].startswith(
        f"run_pretraining.py: error: TF_ENABLE_ONEDNN_OPTS='1', but the run in --output_dir={out} was trained with "
        "TF_ENABLE_ONEDNN_OPTS='0'")
    assert json.loads((out / "training_settings.json").read_text()) == kept  # nothing refused was written
