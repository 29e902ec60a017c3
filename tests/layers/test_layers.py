import keras
import numpy as np
import pytest

from bert_tf.layers import BertEmbeddings, ClassificationHead, MaskedLMHead, MultiHeadSelfAttention, TransformerBlock
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip

B, S, HID = 2, 6, 16


def _wrap(layer, *input_specs):
    """Puts `layer` into a functional model so it can be saved and called symbolically."""
    inputs = [keras.Input(shape=s, dtype=d) for s, d in input_specs]
    return keras.Model(inputs[0] if len(inputs) == 1 else inputs, layer(*inputs))


def _x(seed=0):
    return np.random.default_rng(seed).standard_normal((B, S, HID)).astype(np.float32)


def test_embeddings(tmp_path):
    layer = BertEmbeddings(vocab_size=30, hidden_size=HID, max_position_embeddings=8, type_vocab_size=2, name="emb")
    assert_config_round_trip(layer)
    model = _wrap(layer, ((None,), "int32"), ((None,), "int32"))
    ids = np.arange(B * S).reshape(B, S).astype(np.int32) % 30
    types = np.zeros((B, S), np.int32)
    out = model([ids, types])
    assert out.shape == (B, S, HID)
    # Position matters: the same word at two positions gets two different vectors.
    same = np.full((1, S), 7, np.int32)
    v = np.asarray(model([same, np.zeros_like(same)]))
    assert not np.allclose(v[0, 0], v[0, 1])
    assert_keras_file_round_trip(model, [ids, types], tmp_path)
    with pytest.raises(ValueError, match="sequence length 9 exceeds max_position_embeddings 8"):
        layer(np.zeros((1, 9), np.int32))


def test_attention_respects_mask_and_returns_probs():
    layer = MultiHeadSelfAttention(HID, 4, attention_probs_dropout_prob=0.0)
    assert_config_round_trip(layer)
    x = _x()
    mask = np.ones((B, S), np.int32)
    mask[:, 4:] = 0
    out, probs = layer(x, attention_mask=mask, return_probs=True)
    assert out.shape == (B, S, HID) and probs.shape == (B, 4, S, S)
    probs = np.asarray(probs)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert np.all(probs[..., 4:] < 1e-30)
    # Changing a masked-out position changes no unmasked output.
    x2 = x.copy()
    x2[:, 5] += 10.0
    out2 = layer(x2, attention_mask=mask)
    np.testing.assert_allclose(np.asarray(out)[:, :4], np.asarray(out2)[:, :4], atol=1e-6)


def test_attention_rejects_bad_head_count():
    with pytest.raises(ValueError, match="hidden_size 16 is not a multiple of num_attention_heads 3"):
        MultiHeadSelfAttention(HID, 3)


def test_transformer_block(tmp_path):
    layer = TransformerBlock(HID, 4, 32, hidden_act="gelu", name="block")
    assert_config_round_trip(layer)
    model = _wrap(layer, ((S, HID), "float32"), ((S,), "int32"))
    inputs = [_x(), np.ones((B, S), np.int32)]
    assert model(inputs).shape == (B, S, HID)
    assert_keras_file_round_trip(model, inputs, tmp_path)
    # Dropout is active only when training.
    a = np.asarray(layer(inputs[0], training=True))
    b = np.asarray(layer(inputs[0], training=True))
    assert not np.allclose(a, b)


@pytest.mark.parametrize("mask_rank", [2, 3])
def test_transformer_block_query_positions_give_those_rows_of_the_full_output(mask_rank):
    layer = TransformerBlock(HID, 4, 32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(1)
    if mask_rank == 2:
        mask = np.ones((B, S), np.int32)
        mask[1, 4:] = 0
    else:
        mask = (rng.random((B, S, S)) < 0.7).astype(np.int32)
    rows = np.array([[0, 3, 3, 5], [0, 1, 2, 0]], np.int32)  # repeats allowed
    full, full_probs = layer(_x(), attention_mask=mask, return_probs=True)
    some, some_probs = layer(_x(), attention_mask=mask, return_probs=True, query_positions=rows)
    expected = np.take_along_axis(np.asarray(full), rows[:, :, None], axis=1)
    np.testing.assert_allclose(np.asarray(some), expected, atol=1e-5)
    expected_probs = np.take_along_axis(np.asarray(full_probs), rows[:, None, :, None], axis=2)
    np.testing.assert_allclose(np.asarray(some_probs), expected_probs, atol=1e-6)
    # Symbolically: [B, F, hidden] and probabilities [B, N, F, S].
    spec = layer.compute_output_spec(
        keras.KerasTensor((None, S, HID)), return_probs=True, query_positions=keras.KerasTensor((None, 4), "int32")
    )
    assert spec[0].shape == (None, 4, HID) and spec[1].shape == (None, 4, 4, S)


def test_transformer_block_skipping_padding():
    """skip_padding: real rows as the plain block's, padding rows zero, with the probabilities
    asked for too; a 3-D mask and query_positions keep the plain path; not part of the config."""
    layer = TransformerBlock(HID, 4, 32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    mask = np.ones((B, S), np.int32)
    mask[1, 2:] = 0
    plain = np.asarray(layer(_x(), attention_mask=mask))
    layer.skip_padding = True
    skipped = np.asarray(layer(_x(), attention_mask=mask))
    real = mask.astype(bool)
    np.testing.assert_allclose(skipped[real], plain[real], atol=1e-5)
    assert np.all(skipped[~real] == 0) and np.any(plain[~real] != 0)
    full_mask = np.broadcast_to(mask[:, None, :], (B, S, S))
    np.testing.assert_allclose(np.asarray(layer(_x(), attention_mask=full_mask)), plain, atol=1e-5)
    with_probs, _ = layer(_x(), attention_mask=mask, return_probs=True)
    np.testing.assert_allclose(np.asarray(with_probs)[real], plain[real], atol=1e-5)
    rows = np.array([[0, 2], [0, 1]], np.int32)
    np.testing.assert_allclose(np.asarray(layer(_x(), attention_mask=mask, query_positions=rows)),
                               np.take_along_axis(plain, rows[:, :, None], axis=1), atol=1e-5)
    assert "skip_padding" not in layer.get_config()


def test_padding_skipped_finds_the_blocks_a_layer_holds_and_restores_them():
    from bert_tf.models import padding_skipped

    class Holder(keras.layers.Layer):  # a user's layer around a block: no `.layers` attribute
        def __init__(self):
            super().__init__()
            self.block = TransformerBlock(HID, 4, 32)

    holder = Holder()
    with padding_skipped(holder):
        assert holder.block.skip_padding
    assert not holder.block.skip_padding
    with padding_skipped(holder, skip=False):
        assert not holder.block.skip_padding
    with pytest.raises(ValueError, match="holds no TransformerBlock"):
        with padding_skipped(keras.layers.Dense(2, name="dense")):
            pass


def test_masked_lm_head_untied(tmp_path):
    layer = MaskedLMHead(vocab_size=30, hidden_size=HID, name="mlm")
    assert_config_round_trip(layer)
    model = _wrap(layer, ((S, HID), "float32"), ((3,), "int32"))
    positions = np.array([[0, 2, 5], [1, 1, 3]], np.int32)
    out = model([_x(), positions])
    assert out.shape == (B, 3, 30) and out.dtype == "float32"
    # Two requests for the same position give the same logits.
    np.testing.assert_allclose(np.asarray(out)[1, 0], np.asarray(out)[1, 1], atol=1e-6)
    assert_keras_file_round_trip(model, [_x(), positions], tmp_path)


def test_classification_head(tmp_path):
    layer = ClassificationHead(num_classes=3, dropout_rate=0.1, name="cls")
    assert_config_round_trip(layer)
    model = _wrap(layer, ((HID,), "float32"))
    x = _x()[:, 0]
    assert model(x).shape == (B, 3)
    assert_keras_file_round_trip(model, x, tmp_path)
