import keras
import numpy as np
import pytest

from bert_tf import BertEncoder, BertPretrainer
from bert_tf.models import masked_lm_loss, masked_lm_xent, next_sentence_loss
from tests import numpy_bert
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import tiny_config, tiny_inputs


@pytest.fixture
def config():
    return tiny_config()


def _labels(config, x, seed=1):
    rng = np.random.default_rng(seed)
    b, p = x["masked_lm_positions"].shape
    weights = np.ones((b, p), np.float32)
    weights[-1, -2:] = 0.0  # padded predictions, as the data has
    return {
        "masked_lm_ids": rng.integers(5, config.vocab_size, size=(b, p)).astype(np.int32),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, size=(b, 1)).astype(np.int32),
    }


def test_word_embeddings_are_tied_and_counted_once(config):
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    table = model.encoder.embeddings.embedding_table
    assert model.masked_lm.embedding_table is table
    assert len({id(w) for w in model.weights}) == len(model.weights)
    # 39 encoder variables (5 embedding, 16 per layer, 2 pooler) + 5 masked LM + 2 NSP.
    assert len(model.trainable_weights) == 39 + 5 + 2


def test_losses_match_numpy_statement_of_original(config):
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    x = tiny_inputs(config)
    y = _labels(config, x)
    out = model(x)
    mlm, nsp = np.asarray(out["masked_lm_logits"]), np.asarray(out["next_sentence_logits"])
    ref_mlm, ref_nsp = numpy_bert.pretraining_loss(
        mlm.astype(np.float64),
        nsp.astype(np.float64),
        y["masked_lm_ids"],
        y["masked_lm_weights"],
        y["next_sentence_labels"][:, 0],
    )
    assert abs(float(masked_lm_loss(mlm, y["masked_lm_ids"], y["masked_lm_weights"])) - ref_mlm) < 1e-5
    assert abs(float(next_sentence_loss(nsp, y["next_sentence_labels"])) - ref_nsp) < 1e-5
    total = model.compute_loss(x, y, out)
    assert abs(float(total) - (ref_mlm + ref_nsp)) < 1e-5


def _xent_and_gradient(logits, ids, weights):
    import tensorflow as tf

    logits = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(logits)
        xent = masked_lm_xent(logits, ids)
        total = tf.reduce_sum(weights * xent)
    return xent.numpy(), tape.gradient(total, logits).numpy()


@pytest.mark.parametrize("gap", [0.0, 200.0])
def test_masked_lm_xent_and_its_gradient_match_numpy(gap):
    """-log_softmax[id] and d/dlogits = weight * (softmax - one_hot), also for a batch where one
    label's probability underflows float32 (gap: how far its logit sits below the row's max)."""
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal((3, 4, 50)) * 4).astype(np.float32)
    ids = rng.integers(0, 50, size=(3, 4)).astype(np.int32)
    logits[1, 2, ids[1, 2]] = logits[1, 2].max() - gap
    weights = rng.uniform(0.0, 2.0, size=(3, 4)).astype(np.float32)
    xent, grad = _xent_and_gradient(logits, ids, weights)
    log_probs = numpy_bert.log_softmax(logits.astype(np.float64))
    one_hot = np.eye(50)[ids]
    np.testing.assert_allclose(xent, -(log_probs * one_hot).sum(-1), rtol=1e-5, atol=1e-5)
    assert gap == 0.0 or xent[1, 2] > gap - 1.0  # finite, about the gap: not inf, not clipped
    np.testing.assert_allclose(grad, weights[..., None] * (np.exp(log_probs) - one_hot), atol=1e-6)


def test_all_zero_weights_give_zero_not_nan():
    logits = np.zeros((1, 2, 5), np.float32)
    assert float(masked_lm_loss(logits, np.zeros((1, 2), np.int32), np.zeros((1, 2), np.float32))) == 0.0


@pytest.mark.slow
def test_fit_lowers_the_pretraining_loss():
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    x = tiny_inputs(config, batch=8)
    y = _labels(config, x)
    history = model.fit(x, y, batch_size=8, epochs=40, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_config_and_keras_file_round_trip(config, tmp_path):
    model = BertPretrainer(BertEncoder.from_bert_config(config), name="pt")
    assert_config_round_trip(model)
    loaded = assert_keras_file_round_trip(model, tiny_inputs(config), tmp_path)
    assert loaded.masked_lm.embedding_table is loaded.encoder.embeddings.embedding_table


def test_compute_loss_without_labels_is_a_clear_error(config):
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    with pytest.raises(ValueError, match="masked_lm_ids"):
        model.compute_loss(tiny_inputs(config), None, None)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_trains_under_mixed_precision_and_round_trips(config, policy, tmp_path):
    keras.mixed_precision.set_global_policy(policy)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))  # float16: Keras adds loss scaling
    x = tiny_inputs(config, batch=4)
    history = model.fit(x, _labels(config, x), batch_size=4, epochs=2, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    assert all(w.dtype == "float32" for w in model.weights)
    assert model(x)["masked_lm_logits"].dtype == "float32"
    keras.mixed_precision.set_global_policy("float32")
    loaded = assert_keras_file_round_trip(model, x, tmp_path)
    assert loaded.encoder.dtype_policy.name == policy


def test_without_next_sentence_prediction_the_masked_lm_is_trained_alone(config, tmp_path):
    # The paper's "No NSP" (§5.1): no next-sentence head, output or loss; the masked LM the same.
    with_nsp = BertPretrainer(BertEncoder.from_bert_config(config))
    model = BertPretrainer(BertEncoder.from_bert_config(config), next_sentence_prediction=False, name="mlm")
    assert model.next_sentence is None
    assert len(model.trainable_weights) == 39 + 5  # the encoder's (pooler included) + masked LM
    model.set_weights([w.numpy() for w in with_nsp.weights if "next_sentence" not in w.path])
    x = tiny_inputs(config)
    y = _labels(config, x)
    del y["next_sentence_labels"]  # not needed
    out = model(x)
    assert sorted(out) == ["masked_lm_logits"]
    np.testing.assert_allclose(out["masked_lm_logits"], with_nsp(x)["masked_lm_logits"], atol=1e-5)
    ref_mlm, _ = numpy_bert.pretraining_loss(
        np.asarray(out["masked_lm_logits"], np.float64), np.zeros((3, 2)), y["masked_lm_ids"],
        y["masked_lm_weights"], np.zeros(3, np.int64),
    )
    assert abs(float(model.compute_loss(x, y, out)) - ref_mlm) < 1e-5
    assert sorted(BertPretrainer.pretraining_losses(y, out)) == ["masked_lm_loss"]
    with pytest.raises(ValueError, match=r"needs labels: y = \{'masked_lm_ids', 'masked_lm_weights'\}"):
        model.compute_loss(x, None, None)

    assert model.get_config()["next_sentence_prediction"] is False
    assert_config_round_trip(model)
    loaded = assert_keras_file_round_trip(model, x, tmp_path)
    assert loaded.next_sentence_prediction is False and loaded.next_sentence is None
    assert with_nsp.get_config()["next_sentence_prediction"] is True
