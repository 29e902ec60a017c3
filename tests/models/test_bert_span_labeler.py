import keras
import numpy as np
import pytest

from bert_tf import BertEncoder, BertSpanLabeler
from bert_tf.checkpoints import original_weights
from bert_tf.layers import SpanHead
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs


def test_logits_are_the_originals_dense_on_the_last_layer():
    """run_squad.create_model: logits = sequence_output . cls/squad/output_weights^T + bias,
    [B, S, 2] split into start (0) and end (1), against a numpy BERT."""
    config = tiny_config()
    model = BertSpanLabeler(BertEncoder.from_bert_config(config))
    x = encoder_part(tiny_inputs(config, batch=3, seq=10))
    out = model(x, training=False)
    weights = original_weights(model)
    assert weights["cls/squad/output_weights"].shape == (2, config.hidden_size)
    assert weights["cls/squad/output_bias"].shape == (2,)
    layers, _ = numpy_bert.bert(weights, config, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
    logits = layers[-1] @ weights["cls/squad/output_weights"].T + weights["cls/squad/output_bias"]
    np.testing.assert_allclose(np.asarray(out["start_logits"]), logits[..., 0], atol=1e-5)
    np.testing.assert_allclose(np.asarray(out["end_logits"]), logits[..., 1], atol=1e-5)
    assert out["start_logits"].dtype == "float32" and tuple(out["end_logits"].shape) == (3, 10)


def test_mixed_precision_logits_stay_float32():
    config = tiny_config()
    model = BertSpanLabeler(BertEncoder.from_bert_config(config, dtype="mixed_bfloat16"))
    out = model(encoder_part(tiny_inputs(config)), training=False)
    assert out["start_logits"].dtype == "float32" and out["end_logits"].dtype == "float32"


@pytest.mark.slow
def test_plain_fit_learns_and_the_keras_file_round_trips(tmp_path):
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertSpanLabeler(BertEncoder.from_bert_config(config))
    x = encoder_part(tiny_inputs(config, batch=16, seq=8, predictions=2))
    # The answer starts at the first token whose id is even and ends one later: the inputs say where.
    start = np.argmax(x["input_word_ids"][:, 1:6] % 2 == 0, axis=1).astype(np.int32) + 1
    y = {"start_logits": start, "end_logits": start + 1}
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss={"start_logits": loss, "end_logits": loss})
    history = model.fit(x, y, epochs=40, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    clone = assert_config_round_trip(model)
    assert clone.encoder.bert_config() == config
    assert_keras_file_round_trip(model, x, tmp_path)
    assert_config_round_trip(SpanHead(initializer_range=0.05, name="span"))
