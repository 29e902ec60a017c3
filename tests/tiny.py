"""The tiny configuration the tests use (hidden <= 64, 2 layers) and matching inputs."""

import numpy as np

from bert_tf import BertConfig

# 20 words + 5 specials; vocab_size below must equal len(VOCAB).
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    "the", "a", "cat", "dog", "sat", "on", "mat", "run", "##s", "##ning",
    "red", "blue", ",", ".", "is", "big", "small", "and", "un", "##want",
]


def tiny_config(**overrides):
    values = dict(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=24,
        type_vocab_size=2,
        initializer_range=0.02,
    )
    values.update(overrides)
    return BertConfig(**values)


def tiny_inputs(config, batch=3, seq=10, predictions=4, seed=0):
    """Random encoder + pretrainer inputs with real padding (rows of different lengths)."""
    rng = np.random.default_rng(seed)
    lengths = np.linspace(seq, max(predictions + 1, seq // 2), batch).astype(int)
    ids = rng.integers(5, config.vocab_size, size=(batch, seq)).astype(np.int32)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
    types = ((np.arange(seq)[None, :] >= lengths[:, None] // 2) * mask).astype(np.int32)
    ids = ids * mask
    positions = np.stack(
        [np.sort(rng.choice(np.arange(1, n), size=predictions, replace=False)) for n in lengths]
    ).astype(np.int32)
    return {
        "input_word_ids": ids,
        "input_mask": mask,
        "input_type_ids": types,
        "masked_lm_positions": positions,
    }


def encoder_part(inputs):
    return {k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}


def write_vocab(path, tokens=VOCAB):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return str(path)
