import keras
import numpy as np
import pytest

from bert_tf import BertEncoder
from bert_tf.models import encoder_inputs, padding_skipped
from tests.helpers import assert_config_round_trip, assert_keras_file_round_trip
from tests.tiny import encoder_part, tiny_config, tiny_inputs


@pytest.fixture
def config():
    return tiny_config()


def test_outputs_and_shapes(config):
    encoder = BertEncoder.from_bert_config(config)
    x = encoder_part(tiny_inputs(config, batch=3, seq=10))
    out = encoder(x)
    assert out["sequence_output"].shape == (3, 10, 32)
    assert out["pooled_output"].shape == (3, 32)
    assert out["embedding_output"].shape == (3, 10, 32)
    assert len(out["encoder_outputs"]) == 2
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
    assert encoder.bert_config() == config


def test_padding_does_not_change_real_tokens(config):
    encoder = BertEncoder.from_bert_config(config)
    x = encoder_part(tiny_inputs(config, batch=2, seq=10))
    x["input_mask"][:] = 1
    x["input_mask"][:, 7:] = 0
    base = np.asarray(encoder(x)["sequence_output"])
    x["input_word_ids"][:, 7:] = 11  # garbage in the padded slots
    changed = np.asarray(encoder(x)["sequence_output"])
    np.testing.assert_allclose(base[:, :7], changed[:, :7], atol=1e-5)


def test_attention_probs_on_request(config):
    encoder = BertEncoder.from_bert_config(config, output_attention_probs=True)
    x = encoder_part(tiny_inputs(config, batch=2, seq=8))
    probs = encoder(x)["attention_probs"]
    assert len(probs) == 2 and probs[0].shape == (2, 4, 8, 8)
    probs = np.asarray(probs[1])
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    masked = x["input_mask"][:, None, None, :] == 0
    assert np.all(np.where(masked, probs, 0) < 1e-30)
    assert "attention_probs" not in BertEncoder.from_bert_config(config)(x)


def test_config_and_keras_file_round_trip(config, tmp_path):
    encoder = BertEncoder.from_bert_config(config, name="enc")
    clone = assert_config_round_trip(encoder)
    assert clone.bert_config() == config
    assert_keras_file_round_trip(encoder, encoder_part(tiny_inputs(config)), tmp_path)


def test_invalid_hyper_parameters_fail_fast():
    with pytest.raises(ValueError, match="hidden_size 30 is not a multiple of num_attention_heads 4"):
        BertEncoder(vocab_size=10, hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="hidden_act 'swish'"):
        BertEncoder(vocab_size=10, hidden_size=8, num_attention_heads=2, hidden_act="swish")


@pytest.mark.slow
@pytest.mark.parametrize("skip_padding", [False, True])
def test_composes_into_a_functional_model_and_trains_with_fit(config, skip_padding):
    """A user's classifier over the encoder learns a rule only the tokens reveal; with the
    padding skipped too (gradients through the gathered and scattered rows, dropout on them),
    on rows with padding."""
    encoder = BertEncoder.from_bert_config(config)
    inputs = encoder_inputs()
    pooled = encoder(inputs)["pooled_output"]
    logits = keras.layers.Dense(2)(pooled)
    model = keras.Model(inputs, logits)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    rng = np.random.default_rng(0)
    n, seq = 128, 8
    ids = rng.integers(5, config.vocab_size, size=(n, seq)).astype(np.int32)
    labels = (ids[:, 1] % 2).astype(np.int32)  # class = parity of the first word's id
    ids[:, 0] = 2  # [CLS]
    mask = (np.arange(seq)[None, :] < rng.integers(3, seq + 1, size=(n, 1))).astype(np.int32)
    x = {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}
    if skip_padding:
        with padding_skipped(model):  # fit traces its step here
            history = model.fit(x, labels, batch_size=16, epochs=12, verbose=0)
        for block in encoder.transformer_layers:
            block.skip_padding = True  # the trained model, run padding-skipped, as it is plain
        skipped = np.asarray(model(x))
        for block in encoder.transformer_layers:
            block.skip_padding = False
        np.testing.assert_allclose(skipped, np.asarray(model(x)), atol=1e-5)
    else:
        history = model.fit(x, labels, batch_size=16, epochs=12, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    assert history.history["accuracy"][-1] > 0.9
    # The encoder's weights moved: it is trained, not frozen.
    assert len(model.trainable_weights) == len(encoder.trainable_weights) + 2


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_keeps_layer_norm_and_softmax_in_float32(config, policy):
    reference = BertEncoder.from_bert_config(config, output_attention_probs=True)
    keras.mixed_precision.set_global_policy(policy)
    encoder = BertEncoder.from_bert_config(config, output_attention_probs=True)
    keras.mixed_precision.set_global_policy("float32")
    encoder.set_weights(reference.get_weights())

    compute = "bfloat16" if policy == "mixed_bfloat16" else "float16"
    block = encoder.transformer_layers[0]
    assert block.intermediate_dense.compute_dtype == compute
    for norm in (encoder.embeddings.layer_norm, block.attention_layer_norm, block.output_layer_norm):
        assert norm.compute_dtype == "float32"
    assert all(w.dtype == "float32" for w in encoder.weights)  # variables stay float32

    x = encoder_part(tiny_inputs(config))
    out, ref = encoder(x), reference(x)
    assert out["attention_probs"][0].dtype == "float32"
    assert out["sequence_output"].dtype == "float32"  # leaves a float32 LayerNorm
    assert out["pooled_output"].dtype == compute
    tolerance = 0.1 if compute == "bfloat16" else 0.02
    diff = np.max(np.abs(np.asarray(out["sequence_output"]) - np.asarray(ref["sequence_output"])))
    assert diff < tolerance
