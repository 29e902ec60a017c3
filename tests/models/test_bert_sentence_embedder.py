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


def _numpy_ranking_loss(anchors, positives, negatives, scale):
    """MultipleNegativesRankingLoss in numpy: cross-entropy over scaled cosine similarities, the
    right candidate of anchor i being positive i."""
    def unit(x):
        return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)

    candidates = positives if negatives is None else np.concatenate([positives, negatives])
    scores = unit(anchors) @ unit(candidates).T * scale
    log_probs = scores - np.log(np.exp(scores - scores.max(-1, keepdims=True)).sum(-1, keepdims=True)) - scores.max(
        -1, keepdims=True)
    return -log_probs[np.arange(len(anchors)), np.arange(len(anchors))]


@pytest.mark.parametrize("with_negatives", [False, True])
def test_the_ranking_loss_is_cross_entropy_over_scaled_cosines_of_every_candidate(with_negatives):
    from bert_tf.models.bert_sentence_embedder import in_batch_negatives_xent

    rng = np.random.default_rng(0)
    anchors, positives, negatives = (rng.standard_normal((5, 8)).astype(np.float32) for _ in range(3))
    negatives = negatives if with_negatives else None
    for scale in (20.0, 1.0):
        got = np.asarray(in_batch_negatives_xent(anchors, positives, negatives, scale))
        np.testing.assert_allclose(got, _numpy_ranking_loss(anchors, positives, negatives, scale), rtol=1e-5,
                                   atol=1e-5)
    # Each anchor's own positive made identical to it, the others far: the loss falls toward 0.
    close = np.asarray(in_batch_negatives_xent(np.eye(5, 8), np.eye(5, 8), None, 20.0))
    assert close.max() < 1e-6


_JAX_EMBEDDER = r"""
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np
import keras
from bert_tf import BertConfig, BertEncoder, BertSentenceEmbedder
from bert_tf.models.bert_sentence_embedder import in_batch_negatives_xent
assert keras.backend.backend() == "jax"
work = sys.argv[1]
data = np.load(os.path.join(work, "io.npz"))
config = BertConfig.from_json_file(os.path.join(work, "bert_config.json"))
model = BertSentenceEmbedder(BertEncoder.from_bert_config(config), pooling="mean", normalize=True)
model.load_weights(os.path.join(work, "tf.weights.h5"))
x = {k: data[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
out = np.asarray(model(x, training=False))
loss = np.asarray(in_batch_negatives_xent(out, out[::-1]))
leaked = sorted(m for m in sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
print(json.dumps({"embeddings": float(np.abs(out - data["embeddings"]).max()),
                  "loss": float(np.abs(loss - data["loss"]).max()), "leaked": leaked}))
"""


@pytest.mark.slow
def test_the_jax_backend_embeds_as_tensorflow_does(tmp_path):
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("jax")
    from bert_tf.models.bert_sentence_embedder import in_batch_negatives_xent

    config = tiny_config()
    model = BertSentenceEmbedder(BertEncoder.from_bert_config(config), pooling="mean", normalize=True)
    x = encoder_part(tiny_inputs(config))
    out = np.asarray(model(x, training=False))
    model.save_weights(str(tmp_path / "tf.weights.h5"))
    config.to_json_file(str(tmp_path / "bert_config.json"))
    np.savez(tmp_path / "io.npz", **x, embeddings=out, loss=np.asarray(in_batch_negatives_xent(out, out[::-1])))
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", _JAX_EMBEDDER, str(tmp_path)], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == [] and report["embeddings"] <= 1e-5 and report["loss"] <= 1e-4, report


def test_normalizing_is_torchs_rule_and_survives_vectors_whose_squares_overflow():
    """x / max(||x||, 1e-12), restated in float64 numpy: vectors of every size, a zero vector (which
    stays zero), and finite float32 vectors whose squares overflow float32 (which once came out zero)."""
    from bert_tf.layers.sentence_pooling import NORMALIZE_EPSILON, l2_normalize

    rng = np.random.default_rng(0)
    rows = rng.standard_normal((5, 32)) * np.array([[1e-30], [1e-3], [1.0], [1e19], [3e37]])
    vectors = np.concatenate([rows, np.zeros((1, 32))]).astype(np.float32)
    wide = vectors.astype(np.float64)
    expected = wide / np.maximum(np.linalg.norm(wide, axis=-1, keepdims=True), NORMALIZE_EPSILON)
    got = np.asarray(l2_normalize(vectors))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    assert np.all(got[-1] == 0) and np.allclose(np.linalg.norm(got[1:5], axis=-1), 1.0, atol=1e-6)
