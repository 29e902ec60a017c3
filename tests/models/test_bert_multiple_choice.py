import keras
import numpy as np
import pytest

from bert_tf.checkpoints import original_weights
from bert_tf.layers import FlattenChoices
from bert_tf.models import BertEncoder, BertMultipleChoice
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs

B, C, S = 2, 3, 9


def _choices(config, seed=0):
    """[B, C, S] inputs: B * C sequences of different lengths, choice c of example b at [b, c]."""
    flat = encoder_part(tiny_inputs(config, batch=B * C, seq=S, seed=seed))
    return flat, {k: v.reshape(B, C, S) for k, v in flat.items()}


def test_each_choice_is_scored_by_one_vector_on_its_pooled_output():
    """logits[b, c] = pooled(sequence b * C + c) . output_weights^T + output_bias (numpy BERT);
    the model runs its last layer for [CLS] alone."""
    config = tiny_config()
    model = BertMultipleChoice(BertEncoder.from_bert_config(config), num_choices=C)
    flat, x = _choices(config)
    logits = np.asarray(model(x, training=False))
    weights = original_weights(model)
    assert weights["output_weights"].shape == (1, config.hidden_size)
    _, pooled = numpy_bert.bert(weights, config, flat["input_word_ids"], flat["input_mask"], flat["input_type_ids"])
    expected = (pooled @ weights["output_weights"].T + weights["output_bias"]).reshape(B, C)
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    assert logits.dtype == np.float32 and logits.shape == (B, C)


def test_flatten_choices_puts_example_b_choice_c_at_row_b_times_c_plus_c():
    layer = FlattenChoices()
    x = {"a": np.arange(2 * 3 * 4).reshape(2, 3, 4)}
    np.testing.assert_array_equal(layer(x)["a"], np.arange(24).reshape(6, 4))
    spec = layer.compute_output_spec({"a": keras.KerasTensor((None, 3, 5), dtype="int32")})
    assert spec["a"].shape == (None, 5)
    assert_config_round_trip(layer)


@pytest.mark.slow
def test_plain_fit_learns_and_the_keras_file_round_trips(tmp_path):
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertMultipleChoice(BertEncoder.from_bert_config(config), num_choices=C)
    flat, _ = _choices(config, seed=1)
    x = {k: np.concatenate([v.reshape(B, C, S)] * 8) for k, v in flat.items()}  # 16 examples
    y = np.argmax(x["input_word_ids"][:, :, 1], axis=1).astype(np.int32)  # the choice with the largest 2nd id
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    history = model.fit(x, y, epochs=12, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    clone = assert_config_round_trip(model)
    assert clone.num_choices == C and clone.encoder.bert_config() == config
    assert_keras_file_round_trip(model, x, tmp_path)
    with pytest.raises(ValueError, match="num_choices must be at least 2, got 1"):
        BertMultipleChoice(BertEncoder.from_bert_config(config), num_choices=1)
