import os
import warnings

import numpy as np
import pytest

from bert_tf import BertEncoder, BertPretrainer
from bert_tf.checkpoints import load_original_checkpoint, restore, save_original_checkpoint
from bert_tf.checkpoints.original import check_finite
from bert_tf.models import padding_skipped
from tests import numpy_bert
from tests.helpers import dead_owner_tag
from tests.tf1_checkpoint import original_shapes, random_weights, read_tf1_checkpoint, write_tf1_checkpoint
from tests.tiny import encoder_part, tiny_config, tiny_inputs


@pytest.fixture
def config():
    return tiny_config()


@pytest.fixture
def original(tmp_path, config):
    weights = random_weights(original_shapes(config), seed=7)
    prefix = write_tf1_checkpoint(tmp_path / "orig" / "bert_model.ckpt", weights)
    return prefix, weights


def test_pretrainer_matches_numpy_statement_of_original(original, config):
    prefix, weights = original
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # everything used, optimizer slots skipped silently
        report = load_original_checkpoint(model, prefix)
    assert report.unused == []
    assert "global_step" in report.ignored and any(n.endswith("/adam_m") for n in report.ignored)

    x = tiny_inputs(config)
    out = model(x, training=False)
    enc = model.encoder(encoder_part(x), training=False)
    layers, pooled = numpy_bert.bert(weights, config, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
    mlm, nsp = numpy_bert.pretraining_heads(weights, layers[-1], pooled, x["masked_lm_positions"])

    for ours, ref in zip(enc["encoder_outputs"], layers, strict=True):
        assert np.max(np.abs(np.asarray(ours) - ref)) <= 1e-5
    assert np.max(np.abs(np.asarray(enc["sequence_output"]) - layers[-1])) <= 1e-5
    assert np.max(np.abs(np.asarray(enc["pooled_output"]) - pooled)) <= 1e-5
    assert np.max(np.abs(np.asarray(out["masked_lm_logits"]) - mlm)) <= 1e-5
    assert np.max(np.abs(np.asarray(out["next_sentence_logits"]) - nsp)) <= 1e-5


def test_skipping_padding_keeps_the_real_tokens_of_the_numpy_statement(original, config):
    """TransformerBlock.skip_padding: the real tokens' rows of every layer as the original's math
    gives them (its padding rows computed as usual), the padding rows zero; every block restored
    after the context."""
    prefix, weights = original
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    load_original_checkpoint(model, prefix)
    x = tiny_inputs(config, batch=4, seq=12)
    assert x["input_mask"].min() == 0  # rows of different lengths: there is padding to skip
    layers, pooled = numpy_bert.bert(weights, config, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
    mlm, nsp = numpy_bert.pretraining_heads(weights, layers[-1], pooled, x["masked_lm_positions"])
    real = x["input_mask"].astype(bool)
    with padding_skipped(model):
        assert all(block.skip_padding for block in model.encoder.transformer_layers)
        enc = model.encoder(encoder_part(x), training=False)
        out = model(x, training=False)
    assert not any(block.skip_padding for block in model.encoder.transformer_layers)
    for ours, ref in zip(enc["encoder_outputs"], layers, strict=True):
        ours = np.asarray(ours)
        assert np.max(np.abs(ours[real] - ref[real])) <= 1e-5
        assert np.all(ours[~real] == 0)
    assert np.max(np.abs(np.asarray(enc["pooled_output"]) - pooled)) <= 1e-5
    assert np.max(np.abs(np.asarray(out["masked_lm_logits"]) - mlm)) <= 1e-5
    assert np.max(np.abs(np.asarray(out["next_sentence_logits"]) - nsp)) <= 1e-5


def test_encoder_from_pretraining_checkpoint_warns_about_heads(original, config):
    prefix, weights = original
    encoder = BertEncoder.from_bert_config(config)
    with pytest.warns(UserWarning, match=r"7 variable\(s\).*not used by BertEncoder.*cls/predictions/output_bias"):
        report = load_original_checkpoint(encoder, prefix)
    assert len(report.unused) == 7 and all(n.startswith("cls/") for n in report.unused)
    x = encoder_part(tiny_inputs(config))
    _, pooled = numpy_bert.bert(weights, config, *x.values())
    assert np.max(np.abs(np.asarray(encoder(x)["pooled_output"]) - pooled)) <= 1e-5


def test_unknown_variable_is_reported_not_silently_dropped(tmp_path, config):
    weights = random_weights(original_shapes(config, with_heads=False))
    prefix = write_tf1_checkpoint(
        tmp_path / "m.ckpt", weights, extra={"bert/mystery/kernel": np.ones((3,), np.float32)}
    )
    with pytest.warns(UserWarning, match="bert/mystery/kernel"):
        report = load_original_checkpoint(BertEncoder.from_bert_config(config), prefix)
    assert report.unused == ["bert/mystery/kernel"]


def test_missing_variable_names_it_and_assigns_nothing(tmp_path, config):
    weights = random_weights(original_shapes(config, with_heads=False))
    del weights["bert/encoder/layer_1/output/dense/kernel"]
    prefix = write_tf1_checkpoint(tmp_path / "m.ckpt", weights)
    encoder = BertEncoder.from_bert_config(config)
    before = [np.array(w) for w in encoder.get_weights()]
    with pytest.raises(ValueError, match=r"bert/encoder/layer_1/output/dense/kernel: missing .*\(64, 32\)"):
        load_original_checkpoint(encoder, prefix)
    for b, a in zip(before, encoder.get_weights(), strict=True):
        np.testing.assert_array_equal(b, a)


def test_shape_mismatch_names_variable_and_both_shapes(tmp_path, config):
    bigger = tiny_config(intermediate_size=48)
    prefix = write_tf1_checkpoint(tmp_path / "m.ckpt", random_weights(original_shapes(bigger, with_heads=False)))
    with pytest.raises(ValueError) as err:
        load_original_checkpoint(BertEncoder.from_bert_config(config), prefix)
    msg = str(err.value)
    assert (
        "bert/encoder/layer_0/intermediate/dense/kernel: checkpoint has shape (32, 48), model expects (32, 64)" in msg
    )


def test_missing_checkpoint_is_a_clear_error(tmp_path, config):
    with pytest.raises(FileNotFoundError, match="bert_model.ckpt"):
        load_original_checkpoint(BertEncoder.from_bert_config(config), str(tmp_path / "bert_model.ckpt"))


def test_export_is_readable_by_tf1_saver_and_round_trips(tmp_path, original, config):
    prefix, weights = original
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    load_original_checkpoint(model, prefix)
    out_prefix = save_original_checkpoint(model, tmp_path / "export" / "bert_model.ckpt", global_step=5)

    shapes = original_shapes(config)
    restored = read_tf1_checkpoint(out_prefix, shapes)  # what the original's Saver sees
    assert set(restored) == set(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(restored[name], value, err_msg=name)
    files = sorted(os.listdir(tmp_path / "export"))
    assert files == ["bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index", "checkpoint"]

    again = BertPretrainer(BertEncoder.from_bert_config(config))
    restore(again, out_prefix)
    x = tiny_inputs(config)
    np.testing.assert_array_equal(again(x)["masked_lm_logits"], model(x)["masked_lm_logits"])


def test_save_removes_the_temporary_folder_a_killed_save_left(tmp_path, config):
    """A save killed mid-write leaves a dot-named folder; the next save into the folder removes
    it (its writer is gone) but not a live writer's."""
    from bert_tf import BertEncoder
    from bert_tf.checkpoints import save_original_checkpoint
    from bert_tf.io_utils import owner_tag

    left = tmp_path / f".tmp_ckpt_{dead_owner_tag()}_abc"
    left.mkdir()
    (left / "bert_model.ckpt.index").write_bytes(b"partial")
    alive = tmp_path / f".tmp_ckpt_{owner_tag()}_xyz"  # this process: a save in progress
    alive.mkdir()
    save_original_checkpoint(BertEncoder.from_bert_config(config), str(tmp_path / "bert_model.ckpt"))
    assert not left.exists() and alive.exists()
    assert (tmp_path / "bert_model.ckpt.index").exists()


def test_a_weight_holding_nan_or_infinity_is_named_and_nothing_is_assigned(tmp_path, config):
    weights = random_weights(original_shapes(config, with_heads=False))
    weights["bert/encoder/layer_1/attention/self/key/bias"][[3, 5]] = [np.nan, np.inf]
    prefix = write_tf1_checkpoint(tmp_path / "m.ckpt", weights)
    encoder = BertEncoder.from_bert_config(config)
    before = [np.array(w) for w in encoder.get_weights()]
    with pytest.raises(ValueError, match=r"m.ckpt: weight bert/encoder/layer_1/attention/self/key/bias holds NaN or "
                                         r"infinity \(2 of 32 values\)"):
        load_original_checkpoint(encoder, prefix)
    for b, a in zip(before, encoder.get_weights(), strict=True):
        np.testing.assert_array_equal(b, a)


def test_bfloat16_weights_are_checked_too_and_integers_pass():
    import ml_dtypes  # TensorFlow's bfloat16, which numpy does not count as floating

    check_finite({"global_step": np.arange(3)}, "f")
    with pytest.raises(ValueError, match=r"^f: weight w holds NaN or infinity \(1 of 2 values\)"):
        check_finite({"w": np.array([1, np.nan], dtype=ml_dtypes.bfloat16)}, "f")
