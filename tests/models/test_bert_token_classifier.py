import keras
import numpy as np
import pytest

from bert_tf.checkpoints import original_weights
from bert_tf.models import BertEncoder, BertTokenClassifier
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs


def test_logits_are_a_dense_layer_on_every_final_vector():
    """logits[b, s] = sequence_output[b, s] . output_weights^T + output_bias (numpy BERT)."""
    config = tiny_config()
    model = BertTokenClassifier(BertEncoder.from_bert_config(config), num_classes=5)
    x = encoder_part(tiny_inputs(config, batch=3, seq=10))
    logits = np.asarray(model(x, training=False))
    weights = original_weights(model)
    assert weights["output_weights"].shape == (5, config.hidden_size) and weights["output_bias"].shape == (5,)
    layers, _ = numpy_bert.bert(weights, config, x["input_word_ids"], x["input_mask"], x["input_type_ids"])
    expected = layers[-1] @ weights["output_weights"].T + weights["output_bias"]
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    assert logits.dtype == np.float32 and logits.shape == (3, 10, 5)


@pytest.mark.slow
def test_plain_fit_with_first_piece_weights_learns_and_the_keras_file_round_trips(tmp_path):
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertTokenClassifier(BertEncoder.from_bert_config(config), num_classes=3, dropout_rate=0.5)
    x = encoder_part(tiny_inputs(config, batch=16, seq=8, predictions=2))
    y = (x["input_word_ids"] % 3).astype(np.int32)  # a tag the token determines
    weights = x["input_mask"].astype(np.float32) * (np.arange(8) % 2 == 1)  # "first pieces": odd positions
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    history = model.fit(x, y, sample_weight=weights, epochs=12, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    np.testing.assert_array_equal(model(x, training=False), model(x, training=False))  # dropout off
    clone = assert_config_round_trip(model)
    assert clone.num_classes == 3 and clone.dropout_rate == 0.5 and clone.encoder.bert_config() == config
    loaded = assert_keras_file_round_trip(model, x, tmp_path)
    assert type(loaded.classifier).__name__ == "TokenClassificationHead"


def test_googles_layout_loads_the_encoder_and_a_head_of_the_same_shape(tmp_path):
    """A pre-trained checkpoint leaves the head as initialised (and says so); a fine-tuned one,
    with the top-level output_weights [num_tags, hidden] and output_bias, fills it too."""
    import warnings

    from bert_tf.checkpoints import restore
    from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint

    config = tiny_config()
    weights = random_weights(original_shapes(config, with_heads=False), seed=4)
    model = BertTokenClassifier(BertEncoder.from_bert_config(config), num_classes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = restore(model, write_tf1_checkpoint(tmp_path / "pre" / "bert_model.ckpt", weights))
    assert report.not_found == ["output_bias", "output_weights"]
    loaded = original_weights(model)
    np.testing.assert_array_equal(loaded["bert/pooler/dense/kernel"], weights["bert/pooler/dense/kernel"])
    head = {
        "output_weights": np.full((3, config.hidden_size), 0.5, np.float32),
        "output_bias": np.arange(3, dtype=np.float32),
    }
    assert restore(model, write_tf1_checkpoint(tmp_path / "tuned" / "model.ckpt", {**weights, **head})) is None
    np.testing.assert_array_equal(original_weights(model)["output_weights"], head["output_weights"])
