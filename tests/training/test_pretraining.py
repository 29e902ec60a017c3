"""The pre-training loop: accumulation, resume, the original's eval, failure modes."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import tfrecords
from bert_tf.data.pretraining.pipeline import pretraining_dataset
from bert_tf.training.pretraining import (
    Pretraining,
    PretrainingSettings,
    check_data_files,
    input_error_message,
)
from bert_tf.training.trainer import INITIALISED, RESUMED, Diverged
from tests import numpy_bert, warm_scripts
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config

SEQ, PRED = 16, 4
CLS, SEP, MASK = 2, 3, 4
NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def write_records(path, n, vocab_size, seed=0):
    """n pre-training records with real padding and masking, in the original format."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((n, SEQ), np.int64)
    mask, segments = np.zeros_like(ids), np.zeros_like(ids)
    positions, labels = np.zeros((n, PRED), np.int64), np.zeros((n, PRED), np.int64)
    weights = np.zeros((n, PRED), np.float32)
    for i in range(n):
        length = int(rng.integers(8, SEQ + 1))
        split = int(rng.integers(3, length - 2))
        row = rng.integers(5, vocab_size, length)
        row[0], row[split], row[-1] = CLS, SEP, SEP
        k = int(rng.integers(1, PRED + 1))
        pos = np.sort(rng.choice([p for p in range(1, length - 1) if p != split], size=k, replace=False))
        labels[i, :k], positions[i, :k], weights[i, :k] = row[pos], pos, 1.0
        row[pos] = MASK
        ids[i, :length], mask[i, :length], segments[i, split + 1 : length] = row, 1, 1
    features = {
        "input_ids": ids, "input_mask": mask, "segment_ids": segments, "masked_lm_positions": positions,
        "masked_lm_ids": labels, "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype(np.int64),
    }
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in tfrecords.serialize_examples(features).numpy():
            writer.write(record)
    return str(path), features


def settings(tmp_path, name, **kw):
    values = dict(
        output_dir=str(tmp_path / name), train_batch_size=8, eval_batch_size=8, max_seq_length=SEQ,
        max_predictions_per_seq=PRED, learning_rate=1e-2, num_train_steps=6, num_warmup_steps=1,
        save_checkpoints_steps=3, max_eval_steps=100, seed=7,
    )
    values.update(kw)
    return PretrainingSettings(**values)


def weights_of(run):
    return [keras.ops.convert_to_numpy(v) for v in run.model.weights]


def one_device():
    return tf.distribute.OneDeviceStrategy("/cpu:0")


@pytest.mark.slow
def test_gradient_accumulation_matches_one_larger_batch(tmp_path):
    config = tiny_config(**NO_DROPOUT)
    data, _ = write_records(tmp_path / "d.tfrecord", 64, config.vocab_size)
    runs = []
    for k in (1, 2, 4):
        run = Pretraining(
            config, settings(tmp_path, f"k{k}", gradient_accumulation_steps=k, num_train_steps=3), one_device()
        )
        run.train(data)
        runs.append(weights_of(run))
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            np.testing.assert_allclose(a, b, atol=2e-6)
    assert any(
        not np.allclose(a, b)
        for a, b in zip(runs[0], weights_of(Pretraining(config, settings(tmp_path, "init"), one_device())), strict=True)
    )


@pytest.mark.slow
def test_restart_resumes_at_the_saved_step_with_the_same_result(tmp_path):
    config = tiny_config()  # with dropout: its seed states are checkpointed too
    data, _ = write_records(tmp_path / "d.tfrecord", 40, config.vocab_size)
    straight = Pretraining(config, settings(tmp_path, "straight"), one_device())
    straight.train(data)

    class Killed(Exception):
        pass

    def kill_at_4(step, logs):
        if step == 4:  # after ckpt-3 was written, before anything of step 4 is saved
            raise Killed

    first = Pretraining(config, settings(tmp_path, "resumed", steps_per_execution=1), one_device())
    with pytest.raises(Killed):
        first.train(data, on_log=kill_at_4)
    again = Pretraining(config, settings(tmp_path, "resumed"), one_device())  # the same command
    started, step = again.train(data)
    assert started.start == RESUMED and started.path.endswith("ckpt-3") and step == 6
    for a, b in zip(weights_of(straight), weights_of(again), strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit: data position and dropout masks resume
    assert int(again.optimizer.iterations) == 6
    assert sorted(f for f in os.listdir(tmp_path / "resumed") if f.endswith(".index")) == [
        "ckpt-3.index",
        "ckpt-6.index",
    ]
    # Reached num_train_steps: starting again only restores.
    done = Pretraining(config, settings(tmp_path, "resumed"), one_device())
    assert done.train(data)[1] == 6


def test_eval_from_an_original_checkpoint_matches_numpy(tmp_path):
    config = tiny_config()
    weights = random_weights(original_shapes(config), seed=11)
    ckpt = write_tf1_checkpoint(tmp_path / "orig" / "bert_model.ckpt", weights)
    data, f = write_records(tmp_path / "eval.tfrecord", 20, config.vocab_size, seed=3)
    run = Pretraining(config, settings(tmp_path, "eval", eval_batch_size=4), one_device())
    assert run.restore(ckpt).start == INITIALISED
    results = run.evaluate(data)
    run.write_eval_results(results)

    layers, pooled = numpy_bert.bert(weights, config, f["input_ids"], f["input_mask"], f["segment_ids"])
    mlm, nsp = numpy_bert.pretraining_heads(weights, layers[-1], pooled, f["masked_lm_positions"])
    log_probs = mlm - mlm.max(-1, keepdims=True)
    log_probs = log_probs - np.log(np.exp(log_probs).sum(-1, keepdims=True))
    xent = -np.take_along_axis(log_probs, f["masked_lm_ids"][..., None], -1)[..., 0]
    w = f["masked_lm_weights"]
    nsp_lp = nsp - np.log(np.exp(nsp).sum(-1, keepdims=True))
    nsp_labels = f["next_sentence_labels"][:, 0]
    expected = {
        "masked_lm_loss": (w * xent).sum() / w.sum(),
        "masked_lm_accuracy": (w * (mlm.argmax(-1) == f["masked_lm_ids"])).sum() / w.sum(),
        "next_sentence_loss": -nsp_lp[np.arange(20), nsp_labels].mean(),
        "next_sentence_accuracy": (nsp.argmax(-1) == nsp_labels).mean(),
    }
    for key, value in expected.items():
        assert results[key] == pytest.approx(value, abs=1e-5), key
    assert results["global_step"] == 0
    lines = (tmp_path / "eval" / "eval_results.txt").read_text().splitlines()
    assert sorted(line.split(" = ")[0] for line in lines) == sorted([*expected, "loss", "global_step"])
    assert "global_step = 0" in lines


def _all_finite(checkpoint):
    reader = tf.train.load_checkpoint(checkpoint)
    values = [reader.get_tensor(name) for name, _ in tf.train.list_variables(checkpoint)]
    return all(np.isfinite(v).all() for v in values if isinstance(v, np.ndarray) and v.dtype.kind == "f")


@pytest.mark.slow
def test_a_non_finite_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    config = tiny_config(**NO_DROPOUT)
    data, _ = write_records(tmp_path / "d.tfrecord", 40, config.vocab_size)
    run = Pretraining(
        config, settings(tmp_path, "nan", learning_rate=1e9, num_train_steps=30, save_checkpoints_steps=1), one_device()
    )
    # The weights may overflow in an update whose loss (computed before it) was finite: then the
    # checkpoint of that step is not written either.
    resumes = ("holds finite weights, but resumed with these settings the run may diverge again: to train with a "
               "lower learning rate, start afresh in another output folder")
    with pytest.raises(Diverged, match=r"^the (loss became nan|weights became NaN or Inf \(the step's loss was "
                                       r"[^)]+\)) at step \d+; stopped without saving\. The last checkpoint, "
                                       rf"\S+ckpt-\d+, {resumes}$") as stopped:
        run.train(data)
    last = str(stopped.value).split("The last checkpoint, ")[1].split(",")[0]
    folder = tmp_path / "nan"
    assert last == tf.train.latest_checkpoint(str(folder)) == f"{folder}/ckpt-{stopped.value.step - 1}"
    assert _all_finite(last)  # finite indeed (before, the checkpoint of the update that overflowed was named)

    # Weights that turn NaN in the step before a checkpoint (the step's loss, computed before its
    # update, still finite): that checkpoint is not written, and the error names the one before.
    def spoil_at_2(step, logs):
        if step == 2:
            weight = spoilt.model.trainable_variables[0]
            weight.assign(np.full(weight.shape, np.nan, weight.dtype))

    spoilt = Pretraining(config, settings(tmp_path, "spoilt", num_train_steps=4, save_checkpoints_steps=1),
                         one_device())
    with pytest.raises(Diverged) as stopped:
        spoilt.train(data, on_log=spoil_at_2)
    assert stopped.value.step == 2 and str(stopped.value).startswith("the weights became NaN or Inf (the step's loss ")
    assert str(stopped.value).endswith(f"at step 2; stopped without saving. The last checkpoint, "
                                       f"{tmp_path / 'spoilt' / 'ckpt-1'}, {resumes}")
    assert tf.train.latest_checkpoint(str(tmp_path / "spoilt")).endswith("ckpt-1")

    # A learning rate that float32 holds as Inf: its first update overflows the weights; the loss
    # is not blamed for the logged learning rate's Inf (the check reads the task's figures only).
    with np.errstate(over="ignore"), pytest.raises(Diverged) as stopped:  # the cast to float32 overflows
        Pretraining(config, settings(tmp_path, "inf", learning_rate=1e39, num_train_steps=2, num_warmup_steps=0,
                                     save_checkpoints_steps=1), one_device()).train(data)
    assert str(stopped.value).startswith("the weights became NaN or Inf (the step's loss was ")
    assert str(stopped.value).endswith(" at step 1; stopped without saving. No checkpoint was saved before it")


def test_bad_settings_fail_before_training(tmp_path):
    config = tiny_config()
    with pytest.raises(ValueError, match="train_batch_size=10 is not divisible by 1 replica\\(s\\) x 4"):
        Pretraining(config, settings(tmp_path, "x", train_batch_size=10, gradient_accumulation_steps=4), one_device())
    with pytest.raises(
        ValueError,
        match="Cannot use sequence length 64 because the BERT model was only trained up to sequence length 24",
    ):
        Pretraining(config, settings(tmp_path, "y", max_seq_length=64), one_device())


def test_check_data_files_reads_each_files_first_record(tmp_path):
    vocab_size = tiny_config().vocab_size
    good, _ = write_records(tmp_path / "good.tfrecord", 4, vocab_size)
    text = tmp_path / "corpus.txt"
    text.write_text("The cat sat on the mat.\n")
    check_data_files([good, good], SEQ, PRED, vocab_size)  # pre-training data of these lengths
    cases = [
        (([good, str(text)], SEQ, PRED, vocab_size), f"{text} is not a TFRecord file"),  # every file, not the first
        (([good], 32, PRED, vocab_size), f"{good} has input_ids of length 16, but "),
        (([good], SEQ, 6, vocab_size), f"{good} has masked_lm_positions of length 4, but "),
        (([good], SEQ, PRED, 6), f"{good} has token id \\d+, but vocab_size=6"),  # ids from 5 up to 24
    ]
    for arguments, message in cases:
        with pytest.raises(ValueError, match=f"^{message}"):
            check_data_files(*arguments)


def test_input_error_message_names_a_truncated_file_and_lets_other_errors_through(tmp_path):
    path, features = write_records(tmp_path / "d.tfrecord", 64, tiny_config().vocab_size)
    # TFRecord framing: 8-byte length, 4-byte CRC, the record, 4-byte CRC.
    records = tfrecords.serialize_examples(features).numpy()
    starts = np.cumsum([0] + [16 + len(r) for r in records])
    cut = int(starts[10] + 20)  # inside the eleventh record
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:cut])
    with pytest.raises(tf.errors.DataLossError) as caught:
        list(tf.data.TFRecordDataset(path))
    message = input_error_message(caught.value, [path])
    assert message == f"{path} is truncated: its record at byte {starts[10]} is cut short"
    # The pipeline's own check of every record: its sentence, without TensorFlow's trimmings.
    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        list(pretraining_dataset(path, 8, SEQ, PRED, is_training=False, vocab_size=6))
    message = input_error_message(caught.value, [path])
    assert message.startswith(f'TFRecord "{path}" has token ids [') and "\n" not in message
    assert message.endswith("outside [0, vocab_size=6): the data was made with another vocab")
    assert input_error_message(tf.errors.InvalidArgumentError(None, None, "Incompatible shapes"), [path]) is None
    assert input_error_message(OSError(28, "No space left on device"), [path]) is None


def _two_cpu_devices(code, tmp_path):
    """Runs `code` (which splits the CPU in two before TensorFlow starts) in a fresh process on
    64 records in tmp_path; returns the JSON it printed last."""
    write_records(tmp_path / "d.tfrecord", 64, tiny_config().vocab_size)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = warm_scripts.run(["-c", code, str(tmp_path), repo], cwd=repo, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


_MIRRORED = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from bert_tf.training.distribution import split_cpu
split_cpu(2)
import tensorflow as tf
from tests.tiny import tiny_config
from tests.training.test_pretraining import NO_DROPOUT, settings, weights_of
from bert_tf.training.pretraining import Pretraining
import pathlib
tmp = pathlib.Path(sys.argv[1])
config = tiny_config(**NO_DROPOUT)
out = {}
for name, strategy in (("one", tf.distribute.OneDeviceStrategy("/cpu:0")),
                       ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
    run = Pretraining(config, settings(tmp, name, num_train_steps=5, save_checkpoints_steps=5), strategy)
    losses = []
    run.train(str(tmp / "d.tfrecord"), on_log=lambda step, logs: losses.append(logs["loss"]))
    out[name] = {"losses": losses, "replicas": strategy.num_replicas_in_sync,
                 "weights": [float(abs(w).sum()) for w in weights_of(run)]}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_mirrored_over_two_cpu_devices_follows_the_one_device_trajectory(tmp_path):
    out = _two_cpu_devices(_MIRRORED, tmp_path)
    assert out["one"]["replicas"] == 1 and out["mirrored"]["replicas"] == 2
    assert len(out["one"]["losses"]) == 5
    # Same global batches, globally normalised losses, clipping after the sum: equal up to float
    # summation order (stated tolerance 1e-5 relative).
    np.testing.assert_allclose(out["mirrored"]["losses"], out["one"]["losses"], rtol=1e-5)
    np.testing.assert_allclose(out["mirrored"]["weights"], out["one"]["weights"], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_init_checkpoint_accepts_our_training_checkpoints(tmp_path):
    from bert_tf import BertEncoder
    from bert_tf.checkpoints import restore

    config = tiny_config(**NO_DROPOUT)
    data, _ = write_records(tmp_path / "d.tfrecord", 40, config.vocab_size)
    run = Pretraining(config, settings(tmp_path, "first", num_train_steps=3), one_device())
    run.train(data)
    ckpt = str(tmp_path / "first" / "ckpt-3")

    encoder = BertEncoder.from_bert_config(config)  # e.g. extract_features --init_checkpoint=ckpt-3
    restore(encoder, ckpt)
    for a, b in zip(encoder.weights, run.model.encoder.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))

    fresh = Pretraining(config, settings(tmp_path, "second"), one_device())  # a new run from it
    assert fresh.restore(ckpt).start == INITIALISED
    for a, b in zip(weights_of(fresh), weights_of(run), strict=True):
        np.testing.assert_array_equal(a, b)
    assert fresh.global_step == 0  # weights only: a new run starts its own schedule

    with pytest.raises(ValueError, match="does not hold this model"):
        restore(BertEncoder.from_bert_config(tiny_config(num_hidden_layers=3)), ckpt)


@pytest.mark.slow
def test_float16_uses_dynamic_loss_scaling_and_skips_overflowing_steps(tmp_path):
    config = tiny_config(**NO_DROPOUT)
    data, _ = write_records(tmp_path / "d.tfrecord", 64, config.vocab_size)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        run = Pretraining(config, settings(tmp_path, "fp16", num_train_steps=4, steps_per_execution=1), one_device())
        assert run.loss_scaling
        run.optimizer.dynamic_scale.assign(2.0**40)  # float16 gradients overflow at first
        losses = []
        run.train(data, on_log=lambda step, logs: losses.append(logs["loss"]))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    scale = float(tf.convert_to_tensor(run.optimizer.dynamic_scale.value))
    assert run.global_step == 4 and scale < 2.0**40  # halved on each skipped step
    consumed = int(run.consumed_batches.numpy())
    assert consumed > 4  # skipped steps read data too; a resumed run continues from here
    assert all(np.isfinite(losses))


@pytest.mark.parametrize(
    "variant", [{"optimizer": "lamb"}, {"policy": "mixed_bfloat16"}, {"jit_compile": True}], ids=["lamb", "bf16", "xla"]
)
@pytest.mark.slow
def test_loop_variants_train(tmp_path, variant):
    config = tiny_config(**NO_DROPOUT)
    data, _ = write_records(tmp_path / "d.tfrecord", 48, config.vocab_size)
    variant = dict(variant)
    keras.mixed_precision.set_global_policy(variant.pop("policy", "float32"))
    try:
        run = Pretraining(
            config, settings(tmp_path, "v", num_train_steps=4, steps_per_execution=1, **variant), one_device()
        )
        before = weights_of(run)
        losses = []
        run.train(data, on_log=lambda step, logs: losses.append(logs["loss"]))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert run.global_step == 4 and len(losses) == 4 and all(np.isfinite(losses))
    changed = [not np.array_equal(a, b) for a, b in zip(before, weights_of(run), strict=True)]
    assert sum(changed) == len(changed)  # every variable was updated


_MIRRORED_DROPOUT = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from bert_tf.training.distribution import split_cpu
split_cpu(2)
import numpy as np, pathlib, tensorflow as tf
from tests.tiny import tiny_config, tiny_inputs, encoder_part
from tests.training.test_pretraining import settings, weights_of
from bert_tf.training.pretraining import Pretraining
tmp = pathlib.Path(sys.argv[1])
config = tiny_config()  # with dropout
mirrored = lambda: tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
out = {}
straight = Pretraining(config, settings(tmp, "straight"), mirrored())
straight.train(str(tmp / "d.tfrecord"))
class Killed(Exception):
    pass
def kill_at_4(step, logs):
    if step == 4:
        raise Killed
first = Pretraining(config, settings(tmp, "resumed", steps_per_execution=1), mirrored())
try:
    first.train(str(tmp / "d.tfrecord"), on_log=kill_at_4)
except Killed:
    pass
again = Pretraining(config, settings(tmp, "resumed"), mirrored())
status, _ = again.train(str(tmp / "d.tfrecord"))
out["started"] = [status.start, status.path]
out["max_difference"] = max(float(np.abs(a - b).max()) for a, b in zip(weights_of(straight), weights_of(again)))
# The same input on both replicas, in training mode: each replica must draw its own masks.
x = encoder_part(tiny_inputs(config, batch=2))
encoder = again.model.encoder
results = again.strategy.experimental_local_results(
    again.strategy.run(tf.function(lambda: encoder(x, training=True)["sequence_output"]))
)
out["replicas_differ"] = not np.allclose(np.asarray(results[0]), np.asarray(results[1]))
print(json.dumps(out))
"""


@pytest.mark.slow
def test_mirrored_replicas_draw_their_own_dropout_masks_and_resume_exactly(tmp_path):
    out = _two_cpu_devices(_MIRRORED_DROPOUT, tmp_path)
    start, path = out["started"]
    assert start == RESUMED and path.endswith("ckpt-3")
    assert out["max_difference"] == 0.0  # data position (both replicas' shares) and dropout seeds resume
    assert out["replicas_differ"]
