"""A classifier takes what each source holds: the whole model from a fine-tuned one, the encoder
alone (head left as initialised, and said so) from a pre-trained one."""

import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertClassifier, BertEncoder, BertPretrainer
from bert_tf.checkpoints import restore, save_keras_model
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config


def _numpy(variables):
    return [keras.ops.convert_to_numpy(v) for v in variables]


def _classifier(num_classes=2):
    return BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=num_classes)


def _assert_same(a, b):
    for x, y in zip(_numpy(a), _numpy(b), strict=True):
        np.testing.assert_array_equal(x, y)


def test_from_google_pretrained_and_fine_tuned_layouts(tmp_path):
    config = tiny_config()
    weights = random_weights(original_shapes(config), seed=2)
    pretrained = write_tf1_checkpoint(tmp_path / "pre" / "bert_model.ckpt", weights)
    model = _classifier()
    head = _numpy(model.classifier.weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cls/ heads are reported unused
        report = restore(model, pretrained)
    assert report.not_found == ["output_bias", "output_weights"]
    _assert_same(model.classifier.weights, [tf.constant(h) for h in head])  # untouched
    np.testing.assert_array_equal(_numpy([model.encoder.pooler_dense.kernel])[0], weights["bert/pooler/dense/kernel"])

    tuned = dict(random_weights(original_shapes(config, with_heads=False), seed=3))
    tuned["output_weights"] = np.arange(2 * 32, dtype=np.float32).reshape(2, 32) / 100
    tuned["output_bias"] = np.array([0.5, -0.5], np.float32)
    fine_tuned = write_tf1_checkpoint(tmp_path / "tuned" / "model.ckpt", tuned)
    model = _classifier()
    assert restore(model, fine_tuned) is None
    np.testing.assert_array_equal(_numpy([model.classifier.dense.kernel])[0], tuned["output_weights"].T)
    with pytest.raises(ValueError, match=r"output_weights: checkpoint has shape \(2, 32\), model expects \(3, 32\)"):
        restore(_classifier(3), fine_tuned)


def test_from_our_training_checkpoints_and_keras_files(tmp_path):
    pretrainer = BertPretrainer(BertEncoder.from_bert_config(tiny_config()))
    pre_ckpt = tf.train.Checkpoint(model=pretrainer).save(str(tmp_path / "pre" / "ckpt"))
    model = _classifier()
    report = restore(model, pre_ckpt)
    assert report.not_found == ["the BertClassifier head"]
    _assert_same(model.encoder.weights, pretrainer.encoder.weights)

    tuned = _classifier()
    tuned_ckpt = tf.train.Checkpoint(model=tuned).save(str(tmp_path / "tuned" / "ckpt"))
    model = _classifier()
    assert restore(model, tuned_ckpt) is None
    _assert_same(model.weights, tuned.weights)
    with pytest.raises(ValueError, match=r"holds a BertClassifier of other shapes: .*shape \(32, 2\).* \(32, 3\)"):
        restore(_classifier(3), tuned_ckpt)
    encoder = BertEncoder.from_bert_config(tiny_config())  # e.g. extract_features from a fine-tuned run
    assert restore(encoder, tuned_ckpt) is None
    _assert_same(encoder.weights, tuned.encoder.weights)

    path = save_keras_model(tuned, str(tmp_path / "tuned.keras"))
    model = _classifier()
    assert restore(model, path) is None
    _assert_same(model.weights, tuned.weights)
    other = _classifier(3)  # another label set: the encoder only
    assert restore(other, path).not_found == ["the BertClassifier head"]
    _assert_same(other.encoder.weights, tuned.encoder.weights)


def _truncate(path):
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def test_damaged_misnamed_and_folder_checkpoints(tmp_path):
    import glob
    import shutil

    config = tiny_config()
    weights = random_weights(original_shapes(config), seed=4)
    prefix = write_tf1_checkpoint(tmp_path / "google" / "bert_model.ckpt", weights)
    os.remove(tmp_path / "google" / "checkpoint")  # Google's download has no state file
    model = _classifier()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        restore(model, str(tmp_path / "google"))  # the folder: its bert_model.ckpt
        with pytest.raises(FileNotFoundError, match=r"one file of a checkpoint: pass its prefix, '.*bert_model.ckpt'"):
            restore(_classifier(), prefix + ".index")
    np.testing.assert_array_equal(_numpy([model.encoder.pooler_dense.bias])[0], weights["bert/pooler/dense/bias"])

    damaged = tmp_path / "damaged"
    shutil.copytree(tmp_path / "google", damaged)
    _truncate(glob.glob(str(damaged / "bert_model.ckpt.data-*"))[0])
    before = _numpy(model.weights)
    with pytest.raises(ValueError, match=r"bert_model.ckpt' is damaged \(truncated or corrupted"):
        restore(model, str(damaged / "bert_model.ckpt"))
    for a, b in zip(before, _numpy(model.weights), strict=True):  # nothing half-loaded
        np.testing.assert_array_equal(a, b)

    ours = _classifier()
    run = tmp_path / "run"
    tf.train.CheckpointManager(tf.train.Checkpoint(model=ours), str(run), max_to_keep=2).save(checkpoint_number=7)
    model = _classifier()
    assert restore(model, str(run)) is None  # a run's folder: its latest, ckpt-7
    _assert_same(model.weights, ours.weights)
    _truncate(glob.glob(str(run / "ckpt-7.data-*"))[0])
    with pytest.raises(ValueError, match=r"ckpt-7' is damaged"):
        restore(_classifier(), str(run / "ckpt-7"))
    with pytest.raises(FileNotFoundError, match="is a folder without a checkpoint"):
        restore(_classifier(), str(tmp_path))
