"""LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") on the encoder of
any model here: adapters on its attention and feed-forward Dense layers, every other encoder
weight frozen, and the adapters merged back into plain kernels (keras.ops only).

An adapted Dense layer computes `x (W + (alpha / rank) A B) + b` with W and b frozen, A
`[in, rank]` drawn at random and B `[rank, out]` zero, so that training starts exactly from the
pre-trained model (paper §4.1); this is Keras 3's own `Dense.enable_lora`. The paper adapts the
attention projections only (§4.2); the feed-forward pair is adapted too, as QLoRA (Dettmers et
al. 2023, §4) found needed to match full fine-tuning. A model's task head is not the encoder's: it
trains fully.
"""

import math

import numpy as np
from keras import ops

from bert_tf.errors import shown


def adapted_layers(encoder):
    """The Dense layers LoRA adapts in a BertEncoder, block by block: the attention's query, key,
    value and output projections, the feed-forward intermediate and output layers."""
    layers = []
    for block in encoder.transformer_layers:
        attention = block.attention
        layers += [attention.query, attention.key, attention.value, attention.output_dense]
        layers += [block.intermediate_dense, block.output_dense]
    return layers


def _encoder(model):
    return getattr(model, "encoder", model)


def check_rank(rank, hidden_size, intermediate_size):
    """A ValueError naming lora_rank unless `rank` is below the smallest dimension of the adapted
    kernels (`[hidden, hidden]`, `[hidden, intermediate]`, `[intermediate, hidden]`): at that rank
    the update A B can already be any matrix, and its A and B hold more numbers than the kernel
    they adapt, so LoRA trains more than full fine-tuning would."""
    smallest = min(hidden_size, intermediate_size)
    if rank >= smallest:
        which = "hidden_size" if hidden_size <= intermediate_size else "intermediate_size"
        raise ValueError(
            f"{shown.lora_rank}={rank} is not below {which} {smallest}, the smallest dimension of the adapted layers: "
            f"the adapters would train more numbers than the layers hold (full fine-tuning: {shown.lora_rank}=0)"
        )


def enable_lora(model, rank, alpha=None):
    """Adds adapters of rank `rank` and scale alpha / rank (alpha: default `rank`) to the
    `adapted_layers` of `model`'s encoder (`model` itself, or its `.encoder`) and freezes every
    other weight of the encoder: embeddings, LayerNorms, pooler, the adapted layers' kernels and
    biases. Call it once the pre-trained weights are in: they are the adapters' base. The rank
    must be below the adapted layers' smallest dimension (`check_rank`)."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"{shown.lora_rank}={rank} must be a positive integer")
    encoder = _encoder(model)
    check_rank(rank, encoder.hidden_size, encoder.intermediate_size)
    layers = adapted_layers(encoder)
    for layer in layers:
        layer.enable_lora(rank, lora_alpha=alpha)
    adapters = {id(w) for layer in layers for w in (layer.lora_kernel_a, layer.lora_kernel_b)}
    for weight in _encoder(model).weights:
        if id(weight) not in adapters:
            weight.trainable = False
    return model


def lora_of(model):
    """`(rank, alpha)` of `model`'s adapters, or None when it has none."""
    for layer in adapted_layers(_encoder(model)):
        if layer.lora_enabled:
            return layer.lora_rank, layer.lora_alpha
    return None


def merged_weights(model):
    """`model`'s weights as the same model without adapters holds them (its `weights` in order,
    the adapters left out): each adapted kernel becomes W + (alpha / rank) A B (computed in float64,
    stored in W's dtype), every other weight stays as it is."""
    merged, adapters = {}, set()
    for layer in adapted_layers(_encoder(model)):
        if not layer.lora_enabled:
            continue
        a, b = (ops.convert_to_numpy(w).astype(np.float64) for w in (layer.lora_kernel_a, layer.lora_kernel_b))
        kernel = next(w for w in layer.weights if w.name == "kernel")
        delta = (layer.lora_alpha / layer.lora_rank) * (a @ b)
        merged[id(kernel)] = (ops.convert_to_numpy(kernel).astype(np.float64) + delta).astype(kernel.dtype)
        adapters |= {id(layer.lora_kernel_a), id(layer.lora_kernel_b)}
    kept = [w for w in model.weights if id(w) not in adapters]
    return [merged[id(w)] if id(w) in merged else ops.convert_to_numpy(w) for w in kept]


def restore_merged(model, rank, alpha, restore):
    """Restores a LoRA run's checkpoint into `model`, which has no adapters: `restore(twin)` reads
    it into a copy of `model` (same class and config) given adapters of `rank` and `alpha` (the
    checkpoint holds the frozen kernels and the adapters apart), then `model` takes the copy's
    `merged_weights`. Returns what `restore` returned."""
    twin = type(model).from_config(model.get_config())
    enable_lora(twin, rank, alpha)
    report = restore(twin)
    model.set_weights(merged_weights(twin))
    return report


def parameter_counts(model):
    """`(trainable, total)`: how many numbers `model`'s trainable weights hold, and all of its
    weights (with LoRA: the adapters and the head, and the whole model with its adapters)."""
    return tuple(sum(math.prod(w.shape) for w in weights) for weights in (model.trainable_weights, model.weights))
