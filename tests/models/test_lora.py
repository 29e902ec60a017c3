"""LoRA on the encoder: which weights train and how many numbers they hold (stated by hand for the
tiny config), a model that starts where it was, and adapters merged into plain kernels that give
the adapted model's outputs."""

import keras
import numpy as np
import pytest

from bert_tf.models import BertClassifier, BertEncoder, BertMultipleChoice, BertSpanLabeler, BertTokenClassifier, lora
from tests.tiny import encoder_part, tiny_config, tiny_inputs

# The tiny config: hidden 32, intermediate 64, 2 blocks, vocab 25, 24 positions, 2 token types.
H, FF, BLOCKS = 32, 64, 2


def _adapter_numbers(rank):
    # Per block: query, key, value and the attention output are [H, H] (A [H, r], B [r, H]); the
    # feed-forward layers are [H, FF] and [FF, H].
    return BLOCKS * (4 * rank * (H + H) + rank * (H + FF) + rank * (FF + H))


FULL = (  # every weight of the tiny classifier with 2 labels
    (25 + 24 + 2) * H + 2 * H  # embeddings and their LayerNorm
    + BLOCKS * (4 * (H * H + H) + 2 * H + (H * FF + FF) + (FF * H + H) + 2 * H)  # blocks
    + (H * H + H)  # pooler
    + (H * 2 + 2)  # the head
)
HEAD = H * 2 + 2
_np = keras.ops.convert_to_numpy


def _classifier(seed=0):
    keras.utils.set_random_seed(seed)
    return BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=2)


def _randomise_adapters(model, seed=1):
    rng = np.random.default_rng(seed)
    for layer in lora.adapted_layers(getattr(model, "encoder", model)):
        for weight in (layer.lora_kernel_a, layer.lora_kernel_b):
            weight.assign(rng.normal(0.0, 0.2, weight.shape).astype("float32"))


def test_only_the_adapters_and_the_head_train():
    model = _classifier()
    assert FULL == 19906 and lora.parameter_counts(model) == (FULL, FULL)
    lora.enable_lora(model, 4)
    assert lora.parameter_counts(model) == (_adapter_numbers(4) + HEAD, FULL + _adapter_numbers(4))
    trainable = {w.path for w in model.trainable_weights}
    head = {w.path for w in model.classifier.weights}
    adapters = trainable - head
    assert head <= trainable and len(adapters) == BLOCKS * 6 * 2
    assert all(path.rsplit("/", 1)[1] in ("lora_kernel_a", "lora_kernel_b") for path in adapters)
    adapted = {path.rsplit("/", 2)[1] for path in adapters}
    assert adapted == {"query", "key", "value", "output_dense", "intermediate_dense"}  # attention's and FFN's
    assert lora.lora_of(model) == (4, 4)  # alpha: the rank's, a scale of 1
    assert lora.lora_of(_classifier()) is None


def test_the_adapted_model_starts_where_the_model_was():
    model = _classifier()
    inputs = encoder_part(tiny_inputs(tiny_config()))
    before = _np(model(inputs))
    lora.enable_lora(model, 2, alpha=8)
    np.testing.assert_array_equal(_np(model(inputs)), before)  # B starts at zero


def test_merged_kernels_are_the_kernel_plus_the_scaled_product_and_give_the_same_outputs():
    model = lora.enable_lora(_classifier(), 4, alpha=8)
    _randomise_adapters(model)
    query = model.encoder.transformer_layers[1].attention.query
    kernel = next(_np(w) for w in query.weights if w.name == "kernel")  # the frozen one
    expected = kernel + (8 / 4) * _np(query.lora_kernel_a) @ _np(query.lora_kernel_b)

    plain = _classifier(seed=5)
    plain.set_weights(lora.merged_weights(model))
    assert lora.lora_of(plain) is None
    np.testing.assert_allclose(_np(plain.encoder.transformer_layers[1].attention.query.kernel), expected,
                               rtol=1e-6, atol=1e-6)
    inputs = encoder_part(tiny_inputs(tiny_config(), seed=3))
    np.testing.assert_allclose(_np(plain(inputs)), _np(model(inputs)),
                               atol=1e-5)
    # The weights LoRA does not adapt are the model's own.
    np.testing.assert_array_equal(_np(plain.encoder.pooler_dense.kernel), _np(model.encoder.pooler_dense.kernel))


def test_restore_merged_reads_with_adapters_and_leaves_plain_weights():
    source = lora.enable_lora(_classifier(), 2)
    _randomise_adapters(source, seed=2)
    seen = []

    def restore(twin):  # stands for reading a LoRA run's checkpoint: its values, adapters included
        seen.append(lora.lora_of(twin))
        twin.set_weights(source.get_weights())
        return "report"

    plain = _classifier(seed=7)
    assert lora.restore_merged(plain, 2, 2.0, restore) == "report"
    assert seen == [(2, 2.0)] and lora.lora_of(plain) is None
    inputs = encoder_part(tiny_inputs(tiny_config(), seed=4))
    np.testing.assert_allclose(_np(plain(inputs)), _np(source(inputs)),
                               atol=1e-5)


@pytest.mark.parametrize("build, choices", [
    (lambda encoder: BertSpanLabeler(encoder), 0),
    (lambda encoder: BertTokenClassifier(encoder, num_classes=3), 0),
    (lambda encoder: BertMultipleChoice(encoder, num_choices=2), 2),
    (lambda encoder: encoder, 0),
])
def test_every_model_on_an_encoder_merges_into_its_plain_self(build, choices):
    keras.utils.set_random_seed(3)
    model = lora.enable_lora(build(BertEncoder.from_bert_config(tiny_config())), 2, alpha=3)
    _randomise_adapters(model)
    inputs = encoder_part(tiny_inputs(tiny_config(), batch=4))
    if choices:  # [batch, choices, seq]
        inputs = {k: v.reshape(2, 2, -1) for k, v in inputs.items()}
    plain = build(BertEncoder.from_bert_config(tiny_config()))
    lora.restore_merged(plain, 2, 3, lambda twin: twin.set_weights(model.get_weights()))
    for a, b in zip(keras.tree.flatten(plain(inputs)), keras.tree.flatten(model(inputs)), strict=True):
        np.testing.assert_allclose(_np(a), _np(b), atol=1e-5)


def test_a_rank_must_be_positive():
    for rank in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=rf"^lora_rank={rank} must be a positive integer$"):
            lora.enable_lora(_classifier(), rank)
