"""The feature-based tagger (paper §5.3, Table 7): each row's features from the frozen encoder's
layers (numpy BERT), the BiLSTM blind to padding, the encoder untouched by training and without
dropout, plain fit, config and .keras round trips, bad settings."""

import keras
import numpy as np
import pytest

from bert_tf.checkpoints import original_weights
from bert_tf.models import BertEncoder, BertFeatureTagger
from bert_tf.models.bert_feature_tagger import FEATURE_LAYERS
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs

CONFIG = tiny_config(num_hidden_layers=5)  # enough layers for "the last four" to leave one out


def _numpy_layers(encoder, x):
    """[embedding output, layer 1, ..., layer L] in float64, from the original's weights."""
    w = {k: np.asarray(v, np.float64) for k, v in original_weights(encoder).items()}
    ids, types = x["input_word_ids"], x["input_type_ids"]
    embeddings = (
        w["bert/embeddings/word_embeddings"][ids]
        + w["bert/embeddings/token_type_embeddings"][types]
        + w["bert/embeddings/position_embeddings"][: ids.shape[1]][None]
    )
    embeddings = numpy_bert.layer_norm(
        embeddings, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"]
    )
    hidden, _ = numpy_bert.bert(w, CONFIG, ids, x["input_mask"], types)
    return [embeddings, *hidden]


def _mix(chosen, s, gamma):
    """ELMo's scalar mix: gamma * sum_j softmax(s)_j h_j."""
    return gamma * sum(wj * h for wj, h in zip(numpy_bert.softmax(s[: len(chosen)]), chosen, strict=True))


def test_each_table_7_row_reads_the_layers_it_names():
    x = encoder_part(tiny_inputs(CONFIG, batch=2, seq=7))
    s = np.array([0.3, -1.0, 0.5, 2.0, 0.1])  # the mix's scalars (a row uses as many as it mixes)
    gamma = 1.7
    for name in FEATURE_LAYERS:
        model = BertFeatureTagger(BertEncoder.from_bert_config(CONFIG), 3, name, lstm_units=4)
        layers = _numpy_layers(model.encoder, x)  # [E, h1, ..., h5]
        expected = {
            "embeddings": layers[0],
            "second_to_last": layers[4],
            "last": layers[5],
            "weighted_sum_last_four": _mix(layers[2:6], s, gamma),
            "concat_last_four": np.concatenate(layers[2:6], axis=-1),
            "weighted_sum_all": _mix(layers[1:6], s, gamma),
        }[name]
        if name.startswith("weighted_sum"):
            model.layer_weights.assign(s[: len(model.layer_weights.numpy())])
            model.gamma.assign(gamma)
        np.testing.assert_allclose(np.asarray(model.features(x)), expected, atol=1e-5, err_msg=name)


def test_the_mix_starts_as_the_mean_of_its_layers():
    model = BertFeatureTagger(BertEncoder.from_bert_config(CONFIG), 3, "weighted_sum_all", lstm_units=4)
    x = encoder_part(tiny_inputs(CONFIG, batch=2, seq=7))
    hidden = model.encoder(x)["encoder_outputs"]
    np.testing.assert_allclose(np.asarray(model.features(x)), np.mean(hidden, axis=0), atol=1e-6)


def test_padding_changes_no_real_positions_logits():
    """The backward LSTM starts at each row's last real piece, not at the padding."""
    model = BertFeatureTagger(BertEncoder.from_bert_config(CONFIG), 3, "last", lstm_units=4)
    x = encoder_part(tiny_inputs(CONFIG, batch=3, seq=10))
    padded = {k: np.pad(v, ((0, 0), (0, 6))) for k, v in x.items()}
    padded["input_word_ids"][:, 10:] = 7  # other ids where the mask is 0
    real = x["input_mask"].astype(bool)
    out, out_padded = np.asarray(model(x)), np.asarray(model(padded))
    np.testing.assert_allclose(out_padded[:, :10][real], out[real], atol=1e-6)


@pytest.mark.slow
def test_fit_trains_the_bilstm_and_head_only_and_the_encoder_runs_without_dropout(tmp_path):
    config = tiny_config(num_hidden_layers=4, hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5)
    model = BertFeatureTagger(
        BertEncoder.from_bert_config(config), num_classes=3, feature_based="weighted_sum_last_four", lstm_units=8,
        dropout_rate=0.0,
    )
    x = encoder_part(tiny_inputs(config, batch=16, seq=8, predictions=2))
    # The encoder's dropout would make these differ; the head has none.
    np.testing.assert_array_equal(model(x, training=True), model(x, training=False))
    y = (x["input_word_ids"] % 3).astype(np.int32)  # a tag the token determines
    weights = x["input_mask"].astype(np.float32) * (np.arange(8) % 2 == 1)  # "first pieces": odd positions
    encoder_before = [w.numpy().copy() for w in model.encoder.weights]
    mix_before = model.layer_weights.numpy().copy()
    assert not any(w is v for w in model.trainable_weights for v in model.encoder.weights)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    history = model.fit(x, y, sample_weight=weights, epochs=25, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    for before, after in zip(encoder_before, model.encoder.weights, strict=True):
        np.testing.assert_array_equal(before, np.asarray(after))  # bit-identical
    assert not np.array_equal(mix_before, np.asarray(model.layer_weights))  # the mix learns

    clone = assert_config_round_trip(model)
    assert (clone.num_classes, clone.feature_based, clone.lstm_units) == (3, "weighted_sum_last_four", 8)
    assert clone.encoder.bert_config() == config and not clone.encoder.trainable
    loaded = assert_keras_file_round_trip(model, x, tmp_path)
    np.testing.assert_array_equal(np.asarray(loaded.layer_weights), np.asarray(model.layer_weights))


def test_bad_settings_name_the_setting_and_value():
    encoder = BertEncoder.from_bert_config(tiny_config())  # 2 layers
    with pytest.raises(ValueError, match=r"^feature_based='first' is not one of embeddings, second_to_last, last, "):
        BertFeatureTagger(encoder, 3, "first")
    with pytest.raises(ValueError, match=r"^feature_based='concat_last_four' needs at least 4 hidden layers, but "
                                         r"the encoder has 2$"):
        BertFeatureTagger(encoder, 3, "concat_last_four")
    with pytest.raises(ValueError, match=r"^lstm_units=0 must be at least 1$"):
        BertFeatureTagger(encoder, 3, "last", lstm_units=0)
    assert BertFeatureTagger(encoder, 3, "second_to_last", lstm_units=2).feature_indices == [1]
