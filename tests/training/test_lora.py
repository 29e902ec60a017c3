"""A LoRA run through the library, as run_classifier.py makes one: a tiny classifier learns a
separable task with only its adapters and head changing (the encoder's weights stay the init
checkpoint's bit for bit), keeps optimizer state for those alone, resumes exactly, and is read back
(by an export, a conversion, a new run) as plain weights that give its outputs."""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoints import convert, restore, save_keras_model
from bert_tf.checkpoints.restore import load_keras_model
from bert_tf.export import exports
from bert_tf.models import BertClassifier, BertEncoder, lora
from bert_tf.runs.record import RunRecord
from bert_tf.tasks.classifier.inputs import encode_examples
from bert_tf.tasks.classifier.processors import InputExample
from bert_tf.tasks.classifier.task import ClassifierTask
from bert_tf.training import run
from bert_tf.training.trainer import INITIALISED, RESUMED, Trainer, TrainingSettings
from tests.tiny import tiny_config, write_vocab

FILL = ["the", "a", "sat", "on", "mat", "red", "blue", "is", "big", "small", "and", "running", "runs"]
RECORD = RunRecord(kind="classifier", task_name="cats", labels=("0", "1"), pair=False, max_seq_length=16,
                   lora_rank=4)
STEPS = 80
_np = keras.ops.convert_to_numpy


def _examples(n, seed):
    """Label 1 iff the sentence has "cat" (else it has "dog"): separable by one word."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = rng.randrange(2)
        words = rng.sample(FILL, 5) + ["cat" if label else "dog"]
        rng.shuffle(words)
        out.append(InputExample(f"x-{i}", " ".join(words), None, str(label)))
    return out


def _trainer(root, output_dir, **overrides):
    task = ClassifierTask(tiny_config(), RECORD.labels, vocab_file=str(root / "vocab.txt"), max_seq_length=16,
                          pair=False)
    values = dict(output_dir=str(output_dir), train_batch_size=16, eval_batch_size=16, predict_batch_size=16,
                  learning_rate=3e-3, num_train_steps=STEPS, num_warmup_steps=0, save_checkpoints_steps=40,
                  steps_per_execution=20, seed=1, lora_rank=4)
    return Trainer(task, TrainingSettings(**{**values, **overrides}), tf.distribute.get_strategy())


def _train(trainer, root, on_log=None, on_start=None):
    """As run_classifier.py trains: from the pre-trained encoder, the run's files beside its checkpoints."""

    def write_files():
        run.write_run_files(trainer.settings.output_dir, RECORD, tiny_config(), str(root / "vocab.txt"))

    return run.train_or_restore(trainer, _features(_examples(128, 0)), True, str(root / "pretrained.keras"),
                                write_files, on_log, on_start)


def _features(examples):
    return encode_examples(examples, list(RECORD.labels), "single")


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora")
    write_vocab(root / "vocab.txt")
    keras.utils.set_random_seed(11)  # the "pre-trained" encoder the run starts from
    save_keras_model(BertEncoder.from_bert_config(tiny_config()), str(root / "pretrained.keras"))
    trainer = _trainer(root, root / "run")
    started = []
    status = _train(trainer, root, on_start=lambda: started.append(trainer.parameters()))
    return root, trainer, status, started


@pytest.mark.slow
def test_lora_learns_and_only_its_adapters_and_head_change(lora_run):
    root, trainer, status, started = lora_run
    assert status.start == INITIALISED and trainer.global_step == STEPS
    # 4 x (query, key, value, attention output: A [32, 4], B [4, 32]) + the feed-forward [32, 64], [64, 32]
    # pairs, in 2 blocks: 3,584 adapter numbers; the head 66; the model 19,906 without adapters.
    assert started == ["Trainable parameters: 3,650 of 23,490 (15.54%)"]
    assert trainer.evaluate(_features(_examples(64, 1)))["eval_accuracy"] > 0.9

    fresh = _trainer(root, root / "fresh")  # the same run before its first step
    fresh.restore(str(root / "pretrained.keras"))
    pretrained = load_keras_model(str(root / "pretrained.keras"))
    adapters = {id(w) for layer in lora.adapted_layers(trainer.model.encoder)
                for w in (layer.lora_kernel_a, layer.lora_kernel_b)}
    base = [w for w in trainer.model.encoder.weights if id(w) not in adapters]
    assert len(base) == len(pretrained.weights)
    for trained, original in zip(base, pretrained.weights, strict=True):  # kernels, biases, embeddings, LayerNorms
        np.testing.assert_array_equal(_np(trained), _np(original))
    for layer in lora.adapted_layers(trainer.model.encoder):
        assert np.abs(_np(layer.lora_kernel_b)).max() > 0  # B starts at zero
    for trained, initial in zip(trainer.model.classifier.weights, fresh.model.classifier.weights, strict=True):
        assert not np.array_equal(_np(trained), _np(initial))


def test_the_optimizer_keeps_state_for_what_trains_only(lora_run, tmp_path):
    _, trainer, _, _ = lora_run
    # AdamW keeps two moments per trainable number (its scalars aside).
    state = sum(int(np.prod(v.shape)) for v in trainer.optimizer.variables if len(v.shape))
    assert state == 2 * 3650
    full = _trainer(lora_run[0], tmp_path, lora_rank=0)
    full.restore()
    assert full.parameters() == "Trainable parameters: 19,906 of 19,906 (100.00%)"  # every run says it
    assert sum(int(np.prod(v.shape)) for v in full.optimizer.variables if len(v.shape)) == 2 * 19906


@pytest.mark.slow
def test_a_stopped_lora_run_resumes_where_an_uninterrupted_one_ends(lora_run, tmp_path):
    root, whole, _, _ = lora_run

    def stop_after_the_first_checkpoint(step, logs):
        if step > 40:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _train(_trainer(root, tmp_path), root, stop_after_the_first_checkpoint)
    resumed = _trainer(root, tmp_path)
    status = _train(resumed, root)
    assert status.start == RESUMED and status.step == 40 and resumed.global_step == STEPS
    for a, b in zip(resumed.model.weights, whole.model.weights, strict=True):
        np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.slow
def test_its_checkpoint_reads_as_plain_merged_weights_with_the_same_outputs(lora_run, tmp_path):
    root, trainer, _, _ = lora_run
    dev = _examples(24, 2)
    probabilities = trainer.predict(_features(dev))["probabilities"]
    inputs = trainer.task.dataset(_features(dev), "predict", 24)
    x, _ = next(iter(inputs))
    logits = _np(trainer.model(x, training=False))

    export = exports.read("classifier", str(root / "run"))
    converted = convert.read_model(str(root / "run")).model  # what to_original and to_keras write
    new_run = BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=2)
    restore(new_run, str(root / "run" / f"ckpt-{STEPS}"))  # a later run's init_checkpoint
    for model in (export.model, converted, new_run):
        assert lora.lora_of(model) is None and len(model.weights) == 41  # nothing beyond the plain model's
        np.testing.assert_allclose(_np(model(x, training=False)), logits, atol=1e-5)

    export.write(str(tmp_path / "serving"))
    names = [name for name, _ in tf.train.list_variables(str(tmp_path / "serving" / "variables" / "variables"))]
    assert names and not [name for name in names if "lora" in name]
    served = tf.saved_model.load(str(tmp_path / "serving")).signatures["serving_default"](
        text_a=tf.constant([e.text_a for e in dev])
    )
    np.testing.assert_allclose(served["probabilities"].numpy(), probabilities, atol=1e-5)

