import keras
import numpy as np
import pytest

from bert_tf import BertClassifier, BertEncoder
from bert_tf.checkpoints import original_weights
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs


def test_logits_are_the_originals_dense_on_pooled_output():
    """logits = pooled . output_weights^T + output_bias, with pooled from a numpy BERT (the
    last layer runs for [CLS] only here: the full layer's row must come out)."""
    config = tiny_config()
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=3)
    x = encoder_part(tiny_inputs(config, batch=3, seq=10))
    logits = np.asarray(model(x, training=False))
    weights = original_weights(model)
    assert weights["output_weights"].shape == (3, config.hidden_size) and weights["output_bias"].shape == (3,)
    _, pooled = numpy_bert.bert(weights, config, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
    expected = pooled @ weights["output_weights"].T + weights["output_bias"]
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    assert logits.dtype == np.float32 and logits.shape == (3, 3)


def test_dropout_only_in_training():
    config = tiny_config()
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2, dropout_rate=0.5)
    x = encoder_part(tiny_inputs(config))
    np.testing.assert_array_equal(model(x, training=False), model(x, training=False))
    assert not np.allclose(model(x, training=True), model(x, training=False))


@pytest.mark.slow
def test_plain_fit_learns_and_the_keras_file_round_trips(tmp_path):
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertClassifier(BertEncoder.from_bert_config(config), num_classes=2)
    x = encoder_part(tiny_inputs(config, batch=16, seq=8, predictions=2))
    y = (x["input_word_ids"][:, 1] % 2).astype(np.int32)  # a label the input determines
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    clone = assert_config_round_trip(model)
    assert clone.num_classes == 2 and clone.encoder.bert_config() == config
    loaded = assert_keras_file_round_trip(model, x, tmp_path)
    assert loaded.classifier.num_classes == 2
