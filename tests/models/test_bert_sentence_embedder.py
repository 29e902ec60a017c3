"""BertSentenceEmbedder: each pooling mode over the real tokens of a numpy BERT's last layer
(sentence-transformers' Pooling and Normalize restated in numpy), and its Keras life cycle."""

import numpy as np
import pytest

from bert_tf.checkpoints import original_weights
from bert_tf.layers.sentence_pooling import POOLING_MODES, SentencePooling
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_sentence_embedder import BertSentenceEmbedder
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs


def _pooled(tokens, mask, pooling):
    """sentence-transformers' Pooling, in numpy: `tokens` [B, S, H], `mask` [B, S]."""
    mask = mask.astype(np.float64)[:, :, None]
    if pooling == "cls":
        return tokens[:, 0]
    if pooling == "max":
        return np.where(mask > 0, tokens, -1e9).max(axis=1)
    count = np.maximum(mask.sum(axis=1), 1e-9)
    total = (tokens * mask).sum(axis=1)
    return total / count if pooling == "mean" else total / np.sqrt(count)


@pytest.mark.parametrize("pooling", POOLING_MODES)
@pytest.mark.parametrize("normalize", [False, True])
def test_each_pooling_is_over_the_real_tokens_of_the_last_layer(pooling, normalize):
    config = tiny_config()
    model = BertSentenceEmbedder(BertEncoder.from_bert_config(config), pooling=pooling, normalize=normalize)
    x = encoder_part(tiny_inputs(config, batch=3, seq=10))
    x["input_mask"][1, 4:] = 0  # a shorter example: its padding must not count
    x["input_word_ids"][1, 4:] = 0
    layers, _ = numpy_bert.bert(original_weights(model.encoder), config, x["input_word_ids"], x["input_mask"],
                                x["input_type_ids"])
    expected = _pooled(layers[-1], x["input_mask"], pooling)
    if normalize:
        expected = expected / np.maximum(np.linalg.norm(expected, axis=-1, keepdims=True), 1e-12)
    got = np.asarray(model(x, training=False))
    assert got.shape == (3, config.hidden_size) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=2e-5)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-5)


def test_padding_changes_nothing():
    config = tiny_config()
    model = BertSentenceEmbedder(BertEncoder.from_bert_config(config), pooling="max")
    x = encoder_part(tiny_inputs(config, batch=2, seq=6))
    longer = {k: np.pad(v, ((0, 0), (0, 5))) for k, v in x.items()}  # five more padding positions
    np.testing.assert_allclose(model(x, training=False), model(longer, training=False), atol=1e-5)


def test_an_unknown_pooling_is_refused_naming_the_modes():
    with pytest.raises(ValueError, match="pooling='weightedmean' is not one of mean, cls, max, mean_sqrt_len"):
        SentencePooling("weightedmean")


def test_config_and_keras_file_round_trip(tmp_path):
    config = tiny_config()
    model = BertSentenceEmbedder(BertEncoder.from_bert_config(config), pooling="mean_sqrt_len", normalize=True)
    assert_config_round_trip(model)
    assert_keras_file_round_trip(model, encoder_part(tiny_inputs(config)), tmp_path)
