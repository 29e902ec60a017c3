"""Pre-training without next-sentence prediction (the paper's "No NSP", §5.1): the masked LM
alone, on the same records; its eval, its checkpoints starting other runs."""

import keras
import numpy as np
import pytest

from bert_tf import BertClassifier, BertEncoder
from bert_tf.checkpoints import restore
from bert_tf.training.pretraining import Pretraining
from bert_tf.training.trainer import INITIALISED
from tests import numpy_bert
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config
from tests.training.test_pretraining import NO_DROPOUT, one_device, settings, weights_of, write_records


def test_eval_from_an_original_checkpoint_has_masked_lm_figures_only(tmp_path):
    config = tiny_config()
    weights = random_weights(original_shapes(config), seed=11)
    ckpt = write_tf1_checkpoint(tmp_path / "orig" / "bert_model.ckpt", weights)
    data, f = write_records(tmp_path / "eval.tfrecord", 20, config.vocab_size, seed=3)
    run = Pretraining(
        config, settings(tmp_path, "eval", eval_batch_size=4, next_sentence_prediction=False), one_device()
    )
    with pytest.warns(UserWarning, match="not used by BertPretrainer: cls/seq_relationship/output_bias"):
        status = run.restore(ckpt)
    # The checkpoint's next-sentence kernel and bias have no place in this model.
    assert status.start == INITIALISED and status.unused == 2
    results = run.evaluate(data)
    run.write_eval_results(results)

    layers, pooled = numpy_bert.bert(weights, config, f["input_ids"], f["input_mask"], f["segment_ids"])
    mlm, _ = numpy_bert.pretraining_heads(weights, layers[-1], pooled, f["masked_lm_positions"])
    xent = -np.take_along_axis(numpy_bert.log_softmax(mlm), f["masked_lm_ids"][..., None], -1)[..., 0]
    w = f["masked_lm_weights"]
    assert results["masked_lm_loss"] == pytest.approx((w * xent).sum() / w.sum(), abs=1e-5)
    accuracy = (w * (mlm.argmax(-1) == f["masked_lm_ids"])).sum() / w.sum()
    assert results["masked_lm_accuracy"] == pytest.approx(accuracy, abs=1e-5)
    # The original's `loss`: the mean over the 5 batches of each one's loss, the masked LM's alone.
    batch_losses = [(w[b : b + 4] * xent[b : b + 4]).sum() / (w[b : b + 4].sum() + 1e-5) for b in range(0, 20, 4)]
    assert results["loss"] == pytest.approx(np.mean(batch_losses), abs=1e-5)
    lines = (tmp_path / "eval" / "eval_results.txt").read_text().splitlines()
    assert sorted(line.split(" = ")[0] for line in lines) == [
        "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"
    ]


def test_training_on_the_same_records_and_fine_tuning_from_its_checkpoint(tmp_path):
    config = tiny_config(**NO_DROPOUT)
    data, _ = write_records(tmp_path / "d.tfrecord", 40, config.vocab_size)
    mlm_only = settings(tmp_path, "mlm", num_train_steps=6, next_sentence_prediction=False)
    run = Pretraining(config, mlm_only, one_device())
    assert run.model.next_sentence is None
    before = weights_of(run)
    logs = []
    run.train(data, on_log=lambda step, values: logs.append(values))
    assert run.global_step == 6 and all(not any("next_sentence" in k for k in values) for values in logs)
    assert all(values["loss"] == values["masked_lm_loss"] for values in logs)
    changed = [not np.array_equal(a, b) for a, b in zip(before, weights_of(run), strict=True)]
    # Everything learns but the pooler, which only the next-sentence head reads.
    frozen = [v.path for v, c in zip(run.model.weights, changed, strict=True) if not c]
    assert sorted(frozen) == ["pooler_dense/bias", "pooler_dense/kernel"]

    # Its checkpoint starts fine-tuning as any other: a classifier takes its encoder.
    classifier = BertClassifier(BertEncoder.from_bert_config(config), num_classes=3)
    report = restore(classifier, str(tmp_path / "mlm" / "ckpt-6"))
    assert report.not_found == ["the BertClassifier head"]
    for a, b in zip(classifier.encoder.weights, run.model.encoder.weights, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
