"""Pre-training without next-sentence prediction (the paper's "No NSP", §5.1): the masked LM
alone, on the same records; its eval, its checkpoints starting other runs."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertClassifier, BertEncoder, BertPretrainer
from bert_tf.checkpoints import restore
from bert_tf.training.pretraining import Pretraining, check_next_sentence_head
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


@pytest.mark.slow
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


def test_a_checkpoint_pre_trained_without_nsp_cannot_start_next_sentence_prediction(tmp_path):
    """Restored partially, its next-sentence head would start untrained (resumed: mid-schedule)."""
    config = tiny_config()
    for nsp in (True, False):  # saved as the loop saves them: the model under "model"
        model = BertPretrainer(BertEncoder.from_bert_config(config), next_sentence_prediction=nsp)
        tf.train.Checkpoint(model=model).save(str(tmp_path / f"nsp_{nsp}" / "ckpt"))
    weights = random_weights(original_shapes(config), seed=1)
    write_tf1_checkpoint(tmp_path / "orig" / "bert_model.ckpt", weights)
    mlm_only = {k: v for k, v in weights.items() if not k.startswith("cls/seq_relationship/")}
    write_tf1_checkpoint(tmp_path / "orig_mlm" / "bert_model.ckpt", mlm_only)
    encoder_only = {k: v for k, v in weights.items() if not k.startswith("cls/")}
    write_tf1_checkpoint(tmp_path / "encoder" / "bert_model.ckpt", encoder_only)
    new, no_nsp = str(tmp_path / "new"), str(tmp_path / "nsp_False")

    with pytest.raises(ValueError) as e:  # resuming: the output folder's latest checkpoint wins
        check_next_sentence_head(no_nsp, str(tmp_path / "orig"), True)
    assert str(e.value) == (
        f"next_sentence_prediction=True, but the checkpoint {no_nsp}/ckpt-1 in output_dir={no_nsp} was pre-trained "
        "without the next-sentence head (next_sentence_prediction=False): that head would start untrained; "
        "resume with next_sentence_prediction=False, or use another output_dir"
    )
    orig_mlm = tmp_path / "orig_mlm"
    for source in (no_nsp, f"{no_nsp}/ckpt-1", str(orig_mlm / "bert_model.ckpt"), str(orig_mlm)):
        with pytest.raises(ValueError, match=f"^next_sentence_prediction=True, but init_checkpoint={re.escape(source)} "
                           "was pre-trained without the next-sentence head"):
            check_next_sentence_head(new, source, True)
    # Accepted: the masked LM alone from it, checkpoints with both heads, an encoder alone (no
    # pre-training heads: both start untrained, as from any encoder), nothing to start from.
    check_next_sentence_head(no_nsp, None, False)
    check_next_sentence_head(new, no_nsp, False)
    for source in (str(tmp_path / "nsp_True"), str(tmp_path / "orig" / "bert_model.ckpt"), str(tmp_path / "encoder")):
        check_next_sentence_head(new, source, True)
    check_next_sentence_head(str(tmp_path / "nsp_True"), no_nsp, True)  # resuming a run with both heads
    check_next_sentence_head(new, None, True)
