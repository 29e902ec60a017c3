import json

import pytest

from bert_tf import BertConfig

# bert_config.json of Google's multilingual release, with its extra keys.
RELEASED = {
    "attention_probs_dropout_prob": 0.1,
    "directionality": "bidi",
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pooler_fc_size": 768,
    "pooler_num_attention_heads": 12,
    "pooler_num_fc_layers": 3,
    "pooler_size_per_head": 128,
    "pooler_type": "first_token_transform",
    "type_vocab_size": 2,
    "vocab_size": 119547,
}


def test_defaults_are_the_original_ones():
    c = BertConfig(vocab_size=100)
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size) == (768, 12, 12, 3072)
    assert (c.hidden_act, c.hidden_dropout_prob, c.attention_probs_dropout_prob) == ("gelu", 0.1, 0.1)
    assert (c.max_position_embeddings, c.type_vocab_size, c.initializer_range) == (512, 16, 0.02)


def test_released_config_round_trips_with_extra_keys(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(RELEASED))
    c = BertConfig.from_json_file(str(path))
    assert c.vocab_size == 119547 and c.extra["directionality"] == "bidi"
    out = tmp_path / "out.json"
    c.to_json_file(str(out))
    text = out.read_text()
    assert json.loads(text) == RELEASED
    # The original's layout: indent 2, sorted keys, trailing newline.
    assert text == json.dumps(RELEASED, indent=2, sort_keys=True) + "\n"
    assert BertConfig.from_dict(c.to_dict()) == c


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(hidden_size=100, num_attention_heads=12), "hidden_size 100 is not a multiple of num_attention_heads 12"),
        (dict(hidden_act="swish"), "hidden_act 'swish' is not supported"),
        (dict(num_hidden_layers=0), "num_hidden_layers must be a positive integer, got 0"),
        (dict(vocab_size=-3), "vocab_size must be a positive integer, got -3"),
        (dict(intermediate_size=3.5), "intermediate_size must be a positive integer"),
        (dict(hidden_dropout_prob=1.5), r"hidden_dropout_prob must be in \[0, 1\)"),
        (dict(initializer_range=0), "initializer_range must be positive"),
    ],
)
def test_invalid_values_fail_with_the_value_in_the_message(overrides, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**{"vocab_size": 10, **overrides})


def test_bad_files_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        BertConfig.from_json_file(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json.*not valid JSON"):
        BertConfig.from_json_file(str(bad))
    no_vocab = tmp_path / "nv.json"
    no_vocab.write_text('{"hidden_size": 8}')
    with pytest.raises(ValueError, match="nv.json.*vocab_size"):
        BertConfig.from_json_file(str(no_vocab))


def test_a_missing_size_field_is_an_error_naming_the_file_and_the_field(tmp_path):
    missing = {k: v for k, v in RELEASED.items() if k != "num_hidden_layers"}
    path = tmp_path / "missing.json"
    path.write_text(json.dumps(missing))
    with pytest.raises(ValueError, match=r"missing.json.*needs 'num_hidden_layers'"):
        BertConfig.from_json_file(str(path))
    # Misspelt, it is both missing and named as the likely cause.
    misspelt = {**missing, "num_hidden_layer": 2}
    path.write_text(json.dumps(misspelt))
    with pytest.raises(ValueError, match=r"needs 'num_hidden_layers' \('num_hidden_layer' is a misspelling\?\)"):
        BertConfig.from_json_file(str(path))
    # The fields every released config shares but which have the originals' defaults may be left out.
    sizes_only = {k: RELEASED[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                           "intermediate_size", "max_position_embeddings", "type_vocab_size")}
    path.write_text(json.dumps(sizes_only))
    assert BertConfig.from_json_file(str(path)).hidden_dropout_prob == 0.1


def test_an_unknown_key_one_edit_from_a_field_warns_naming_both(tmp_path):
    path = tmp_path / "bert_config.json"
    odd = {k: v for k, v in RELEASED.items() if k != "hidden_dropout_prob"}
    path.write_text(json.dumps({**odd, "hidden_dropout_probs": 0.3, "Initializer_range": 0.5}))
    with pytest.warns(UserWarning) as caught:
        config = BertConfig.from_json_file(str(path))
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2 and config.hidden_dropout_prob == 0.1
    assert "'Initializer_range', one edit away from 'initializer_range'" in messages[0]
    assert (
        "'hidden_dropout_probs', one edit away from 'hidden_dropout_prob' (which takes its default, 0.1)" in messages[1]
    )
    assert "bert_config.json" in messages[0]
    # Google's extra keys (pooler_*, directionality) are nowhere near a field: no warning.
    path.write_text(json.dumps(RELEASED))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BertConfig.from_json_file(str(path))
