import json
import os
import subprocess
import sys
import time

import pytest

from tests.run_scripts.conftest import REPO, run_script
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
    return [f"--{k}={v}" for k, v in values.items()] + ["--noprogress"]


def test_killed_run_resumes_with_the_same_command(tmp_path):
    config_file, data = _setup(tmp_path)
    out = tmp_path / "out"
    command = [sys.executable, os.path.join(REPO, "run_scripts", "run_pretraining.py"), *_flags(config_file, data, out)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=REPO)
    deadline = time.time() + 240
    # The checkpoint state file is written (atomically) after ckpt-50's files: killed before it,
    # the run has no checkpoint yet and rightly starts afresh, so wait for it to test resuming.
    while not (out / "checkpoint").exists():
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        assert time.time() < deadline
        time.sleep(0.05)
    process.kill()  # SIGKILL, at whatever point it is
    process.wait()
    assert not (out / "eval_results.txt").exists()

    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Training resumed from" in result.stderr and "ckpt-" in result.stderr
    results = dict(line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())
    assert results["global_step"] == "400"
    assert set(results) == {"global_step", "loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"}
    assert os.path.isdir(out / "train") and os.listdir(out / "train")  # TensorBoard events

    # num_train_steps already reached: the same command just evaluates again.
    again = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert again.returncode == 0 and "now at step 400" in again.stderr


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"max_seq_length": 32}, "has input_ids of length 16, but --max_seq_length=32"),
        ({"do_train": False, "do_eval": False}, "At least one of `do_train` or `do_eval` must be True"),
        ({"train_batch_size": 10, "gradient_accumulation_steps": 4}, "train_batch_size 10 is not divisible"),
        ({"input_file": "/nonexistent/*.tfrecord"}, "matches no file"),
        ({"bert_config_file": "SMALL_VOCAB"}, r"has token id \d+, but --bert_config_file=.* has vocab_size=6"),
        ({"do_train": False}, r"nothing to evaluate or predict with: --output_dir=.* has no checkpoint and no --init_checkpoint"),
        ({"train_batch_size": 0}, r"--train_batch_size must be a positive integer, got 0"),
    ],
)
def test_bad_input_fails_before_training(tmp_path, overrides, message):
    import re

    config_file, data = _setup(tmp_path)
    if overrides.get("bert_config_file") == "SMALL_VOCAB":
        small = tmp_path / "small.json"
        small.write_text(json.dumps(tiny_config(vocab_size=6).to_dict()))
        overrides = {"bert_config_file": small}
    result = run_script("run_pretraining.py", *_flags(config_file, data, tmp_path / "o", **overrides))
    assert result.returncode != 0 and re.search(message, result.stderr), result.stderr[-2000:]
    assert not (tmp_path / "o" / "checkpoint").exists()


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
    result = run_script("run_pretraining.py", *_flags(config_file, data, tmp_path / "o", use_tpu=True, tpu_name=address))
    assert result.returncode != 0
    assert f"no TPU reachable at tpu_name='{address}'" in result.stderr and "nothing accepts connections" in result.stderr, result.stderr[-2000:]
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
        str(config_file), ",".join(files), out, num_train_steps=6, save_checkpoints_steps=3, distribution_strategy="multi_worker_mirrored"
    )
    processes = []
    for index in range(2):
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})}
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
