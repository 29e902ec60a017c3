"""Hugging Face folders both ways, on the tiny model, against the names written out by hand in
tests/hf_folder.py: every transformers class a folder may hold read (safetensors, TF h5, with and
without `bert.`) into the weights the same values get through the original layout, heads a model
lacks reported, every class written as transformers saves it, and bad folders refused in one line
with nothing loaded or written."""

import json
import os
import warnings

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf import BertEncoder, BertPretrainer
from bert_tf.checkpoints import hf, hf_weights, load_original_checkpoint, restore
from bert_tf.runs import registry
from bert_tf.runs.record import RunRecord
from tests.hf_folder import ARCHITECTURES, head_shapes, names, pytorch_tensors, write_folder
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, encoder_part, tiny_config, tiny_inputs

CONFIG = tiny_config()
LABELS = ("B-x", "I-x", "O")


def _weights(architecture, seed=1):
    """Original-layout weights of everything a folder of `architecture` holds."""
    shapes = original_shapes(CONFIG, with_heads=architecture == "BertForPreTraining")
    return random_weights({**shapes, **head_shapes(architecture, CONFIG, len(LABELS))}, seed=seed)


def _model(architecture):
    kind = ARCHITECTURES[architecture][0]
    encoder = BertEncoder.from_bert_config(CONFIG)
    if kind == "encoder":
        return encoder
    if kind == "pretrainer":
        return BertPretrainer(encoder)
    return registry.get(kind).build_model(_record(registry.get(kind)), encoder)


def _record(kind):
    values = {"labels": LABELS, "label_kind": (kind.label_kinds or ("single",))[0]}
    return RunRecord(kind=kind.name, task_name="t", **{k: v for k, v in values.items() if k in kind.record_defaults})


def _numpy(model):
    return [keras.ops.convert_to_numpy(v) for v in model.weights]


def _original(tmp_path, architecture, weights):
    """A model of `architecture` loaded with `weights` through the original layout."""
    model = _model(architecture)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pooler a QA or NER model does not use
        load_original_checkpoint(model, write_tf1_checkpoint(tmp_path / "tf1" / "model.ckpt", weights))
    return model


def test_the_names_follow_the_table_written_by_hand():
    for architecture, (kind, _, _) in ARCHITECTURES.items():
        task_kind = registry.KINDS.get(kind)
        for name, original, transposed in names(architecture):
            assert hf_weights.hf_name(original, task_kind) == (name, transposed), (architecture, original)


CASES = [(a, "safetensors", a != "BertModel") for a in ARCHITECTURES] + [
    ("BertModel", "safetensors", True),  # a BertModel saved inside another class: `bert.` kept
    ("BertForSequenceClassification", "safetensors", False),
    ("BertForPreTraining", "h5", None),
    ("BertForSequenceClassification", "h5", None),
    ("BertForQuestionAnswering", "h5", None),
    ("BertForMultipleChoice", "h5", None),
]


@pytest.mark.slow
@pytest.mark.parametrize("architecture,fmt,prefix", CASES)
def test_a_folder_loads_what_the_original_layout_loads(tmp_path, architecture, fmt, prefix):
    weights = _weights(architecture)
    folder = write_folder(tmp_path / "hf", weights, CONFIG, architecture, fmt=fmt, prefix=prefix)
    model = _model(architecture)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing unused
        report = restore(model, str(folder))
    if ARCHITECTURES[architecture][2]:
        assert report is None
    else:  # a QA or NER folder has no pooler: ours, unused by these models, stays as initialised
        assert report is None or report.not_found == []
        weights = {**weights, **_pooler(model)}
    for ours, expected in zip(_numpy(model), _numpy(_original(tmp_path, architecture, weights)), strict=True):
        np.testing.assert_array_equal(ours, expected)


def _pooler(model):
    pooler = model.encoder.pooler_dense
    return {"bert/pooler/dense/kernel": keras.ops.convert_to_numpy(pooler.kernel),
            "bert/pooler/dense/bias": keras.ops.convert_to_numpy(pooler.bias)}


def test_old_layer_norm_names_and_the_tied_decoder_read_as_transformers_reads_them(tmp_path):
    weights = _weights("BertForPreTraining")
    tensors = pytorch_tensors(weights, "BertForPreTraining")
    old = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
           for k, v in tensors.items()}
    old["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"]
    old["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"]
    old["bert.embeddings.position_ids"] = np.arange(CONFIG.max_position_embeddings, dtype=np.int64)[None]
    folder = write_folder(tmp_path / "hf", weights, CONFIG, "BertForPreTraining")
    save_file(old, str(folder / "model.safetensors"))
    model = BertPretrainer(BertEncoder.from_bert_config(CONFIG))
    report = hf.load(model, str(folder))
    assert report.unused == [] and report.not_found == []
    tied = ["cls.predictions.decoder.bias", "cls.predictions.decoder.weight"]
    assert report.ignored == [*tied, "embeddings.position_ids"]
    x = tiny_inputs(CONFIG)
    theirs = _original(tmp_path, "BertForPreTraining", weights)
    for key in ("masked_lm_logits", "next_sentence_logits"):
        np.testing.assert_array_equal(np.asarray(model(x)[key]), np.asarray(theirs(x)[key]))


def test_heads_a_model_lacks_are_reported_and_a_head_of_another_class_is_not_taken(tmp_path):
    pretraining = write_folder(tmp_path / "pre", _weights("BertForPreTraining"), CONFIG, "BertForPreTraining")
    classifier = _model("BertForSequenceClassification")
    head = [keras.ops.convert_to_numpy(w) for w in classifier.classifier.weights]
    with pytest.warns(UserWarning, match=r"7 weight\(s\) of .*model.safetensors are not used by BertClassifier"):
        report = restore(classifier, str(pretraining))
    heads = [name for name, _, _ in names("BertForPreTraining") if name.startswith("cls.")]
    assert sorted(report.unused) == sorted(heads)
    assert report.not_found == ["classifier.bias", "classifier.weight"]  # fine-tuning starts it afresh
    for before, after in zip(head, classifier.classifier.weights, strict=True):
        np.testing.assert_array_equal(before, keras.ops.convert_to_numpy(after))

    # A sentence classifier's head is no tagger's, though both are called `classifier`.
    sentences = write_folder(tmp_path / "seq", _weights("BertForSequenceClassification"), CONFIG,
                             "BertForSequenceClassification")
    tagger = _model("BertForTokenClassification")
    with pytest.warns(UserWarning, match="classifier.bias, classifier.weight"):
        assert restore(tagger, str(sentences)).not_found == ["classifier.bias", "classifier.weight"]

    # A QA folder has no pooler: a classifier says so, a span labeler (which does not use it) not.
    qa = write_folder(tmp_path / "qa", _weights("BertForQuestionAnswering"), CONFIG, "BertForQuestionAnswering")
    with pytest.warns(UserWarning, match="qa_outputs"):
        assert "pooler.dense.weight" in restore(_model("BertForSequenceClassification"), str(qa)).not_found
    assert restore(_model("BertForQuestionAnswering"), str(qa)) is None
    with pytest.raises(ValueError, match=r"bert.pooler.dense.weight is missing .*\(4 more\)$"):
        restore(BertPretrainer(BertEncoder.from_bert_config(CONFIG)), str(qa))


def _written(model, tmp_path, record=None, do_lower_case=False):
    tmp_path.mkdir(parents=True, exist_ok=True)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    folder = tmp_path / "out"
    assert hf.write_folder(model, str(folder), str(vocab), do_lower_case, record) == hf_weights.architecture_of(model)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_every_model_is_written_as_transformers_saves_its_class(tmp_path, architecture):
    weights = _weights(architecture, seed=4)
    model = _original(tmp_path, architecture, weights)
    kind = registry.KINDS.get(ARCHITECTURES[architecture][0])
    record = _record(kind) if kind else None
    folder = _written(model, tmp_path, record)

    assert sorted(os.listdir(folder)) == ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]
    tensors = load_file(str(folder / "model.safetensors"))
    expected = pytorch_tensors(weights, architecture, prefix=architecture != "BertModel")
    assert sorted(tensors) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(tensors[name], value, err_msg=name)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == [architecture] and config["model_type"] == "bert"
    assert config["hidden_act"] == "gelu_new"  # the original's tanh GELU, in transformers' name
    assert (config["layer_norm_eps"], config["pad_token_id"], config["type_vocab_size"]) == (1e-12, 0, 2)
    if architecture in ("BertForSequenceClassification", "BertForTokenClassification"):
        assert config["id2label"] == {"0": "B-x", "1": "I-x", "2": "O"}
        assert config["label2id"] == {"B-x": 0, "I-x": 1, "O": 2}
    else:
        assert "id2label" not in config
    assert json.loads((folder / "tokenizer_config.json").read_text())["do_lower_case"] is False
    assert (folder / "vocab.txt").read_text().split() == VOCAB

    again, found = hf.folder_model(str(folder))  # read back: the same class, labels and weights
    assert type(again) is type(model) and (found.kind if found else None) == (kind.name if kind else None)
    if kind is not None and kind.label_kinds:
        assert found.labels == LABELS
    restore(again, str(folder))
    if ARCHITECTURES[architecture][2]:
        for ours, theirs in zip(_numpy(again), _numpy(model), strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_a_regression_classifier_and_a_head_without_a_record(tmp_path):
    record = RunRecord(kind="classifier", task_name="stsb", labels=(), label_kind="regression")
    encoder = BertEncoder.from_bert_config(CONFIG)
    model = registry.get("classifier").build_model(record, encoder)
    config = json.loads((_written(model, tmp_path / "a", record) / "config.json").read_text())
    assert (config["id2label"], config["problem_type"]) == ({"0": "LABEL_0"}, "regression")
    assert hf.run_record(str(tmp_path / "a" / "out")).label_kind == "regression"
    config = json.loads((_written(_model("BertForTokenClassification"), tmp_path / "b") / "config.json").read_text())
    assert config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"} and "problem_type" not in config


def test_config_json_maps_onto_bert_config_with_transformers_defaults(tmp_path):
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["BertForSequenceClassification"], "model_type": "bert", "vocab_size": 25, "hidden_size": 32,
        "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "hidden_act": "gelu",
        "max_position_embeddings": 24, "type_vocab_size": 2, "id2label": {"1": "yes", "0": "no"},
        "problem_type": "single_label_classification",
        "gradient_checkpointing": False, "classifier_dropout": None, "transformers_version": "4.44.0",
    }))
    found = hf.read_config(str(folder))
    assert found.bert_config.hidden_act == "gelu_exact"  # transformers' "gelu" is the erf one
    assert found.bert_config.initializer_range == 0.02 and found.bert_config.hidden_dropout_prob == 0.1
    assert found.architecture == "BertForSequenceClassification" and found.labels == ("no", "yes")
    record = hf.run_record(str(folder))
    assert (record.kind, record.labels, record.label_kind, record.do_lower_case) == ("classifier", ("no", "yes"),
                                                                                     "single", True)


REFUSED = [
    ({"position_embedding_type": "relative_key"}, "position_embedding_type='relative_key' is not supported"),
    ({"hidden_act": "swish"}, "hidden_act='swish' is not supported"),
    ({"is_decoder": True}, "is_decoder=True is not supported"),
    ({"add_cross_attention": True}, "add_cross_attention=True is not supported"),
    ({"layer_norm_eps": 1e-5}, "layer_norm_eps=1e-05 is not supported"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings=False is not supported"),
    ({"model_type": "roberta"}, "model_type='roberta' is not BERT"),
    ({"architectures": ["BertLMHeadModel"]}, "architectures=['BertLMHeadModel'] is not one model of"),
    ({"id2label": {"1": "a"}}, "id2label={'1': 'a'} does not number the labels"),
    ({"hidden_size": 30}, "hidden_size 30 is not a multiple of num_attention_heads 4"),
]


@pytest.mark.parametrize("fields,message", REFUSED)
def test_a_config_we_cannot_compute_is_refused_naming_the_file_field_and_value(tmp_path, fields, message):
    folder = write_folder(tmp_path / "hf", _weights("BertModel"), CONFIG, "BertModel", **fields)
    model = BertEncoder.from_bert_config(CONFIG)
    before = _numpy(model)
    with pytest.raises(ValueError) as error:
        restore(model, str(folder))
    assert str(error.value).startswith(str(folder / "config.json") + ": ") and message in str(error.value)
    assert "\n" not in str(error.value)
    for a, b in zip(before, _numpy(model), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_config_without_a_field_the_weights_shapes_need_names_it(tmp_path):
    folder = write_folder(tmp_path / "hf", _weights("BertModel"), CONFIG, "BertModel")
    values = json.loads((folder / "config.json").read_text())
    for gone, message in ((["num_attention_heads"], "missing num_attention_heads"),
                          (["hidden_size", "type_vocab_size"], "missing hidden_size, type_vocab_size")):
        (folder / "config.json").write_text(json.dumps({k: v for k, v in values.items() if k not in gone}))
        with pytest.raises(ValueError) as error:
            restore(BertEncoder.from_bert_config(CONFIG), str(folder))
        assert str(error.value).startswith(f"{folder / 'config.json'}: {message} (needed to read the weights")
        assert "\n" not in str(error.value)


def _bad_folders(tmp_path):
    weights = _weights("BertModel")
    good = write_folder(tmp_path / "good", weights, CONFIG, "BertModel")
    no_config = write_folder(tmp_path / "no_config", weights, CONFIG, "BertModel")
    os.remove(no_config / "config.json")
    no_weights = write_folder(tmp_path / "no_weights", weights, CONFIG, "BertModel")
    os.remove(no_weights / "model.safetensors")
    torch_only = write_folder(tmp_path / "torch_only", weights, CONFIG, "BertModel")
    os.rename(torch_only / "model.safetensors", torch_only / "pytorch_model.bin")
    tensors = pytorch_tensors(weights, "BertModel", prefix=False)
    variants = {
        "shape": {**tensors, "encoder.layer.0.attention.self.query.weight": np.zeros((31, 32), np.float32)},
        "missing": {k: v for k, v in tensors.items() if k != "encoder.layer.1.output.dense.bias"},
        "extra_layer": {**tensors, "encoder.layer.2.output.dense.bias": np.zeros(32, np.float32)},
        "twice": {**tensors, "bert.pooler.dense.bias": tensors["pooler.dense.bias"]},
        "nan": {**tensors, "encoder.layer.1.output.dense.bias": np.full(32, np.nan, np.float32)},
    }
    folders = {"no_config": no_config, "no_weights": no_weights, "torch_only": torch_only}
    for name, values in variants.items():
        folders[name] = write_folder(tmp_path / name, weights, CONFIG, "BertModel")
        save_file(values, str(folders[name] / "model.safetensors"))
    folders["damaged"] = write_folder(tmp_path / "damaged", weights, CONFIG, "BertModel")
    data = (good / "model.safetensors").read_bytes()
    (folders["damaged"] / "model.safetensors").write_bytes(data[: len(data) // 2])
    return folders


BAD = [
    ("no_config", FileNotFoundError, "no_config: no config.json"),
    ("no_weights", FileNotFoundError, "no_weights: no model.safetensors or tf_model.h5"),
    ("torch_only", ValueError, "holds pytorch_model.bin only, which needs PyTorch to read: save the model as"),
    ("shape", ValueError, "encoder.layer.0.attention.self.query.weight has shape (31, 32), model expects (32, 32)"),
    ("missing", ValueError, "encoder.layer.1.output.dense.bias is missing (model expects (32,))"),
    ("extra_layer", ValueError, "encoder.layer.2.output.dense.bias is not a weight of BertEncoder"),
    ("twice", ValueError, "holds pooler.dense.bias twice"),
    ("nan", ValueError, "model.safetensors: weight encoder.layer.1.output.dense.bias holds NaN or infinity (32 of 32"),
    ("damaged", ValueError, "model.safetensors is damaged or not a model.safetensors"),
]


def test_bad_folders_fail_in_one_line_and_load_nothing(tmp_path):
    folders = _bad_folders(tmp_path)
    for name, error, message in BAD:
        model = BertEncoder.from_bert_config(CONFIG)
        before = _numpy(model)
        if name == "no_config":  # weights alone are still a Hugging Face folder, said to lack its config
            assert hf.is_hf_folder(str(folders[name]))
        with pytest.raises(error) as raised:
            restore(model, str(folders[name]))
        assert message in str(raised.value) and "\n" not in str(raised.value), (name, str(raised.value))
        for a, b in zip(before, _numpy(model), strict=True):
            np.testing.assert_array_equal(a, b)


def test_the_tokenizer_settings_and_what_a_script_takes_from_a_folder(tmp_path):
    folder = write_folder(tmp_path / "hf", _weights("BertModel"), CONFIG, "BertModel", vocab=VOCAB, do_lower_case=False)
    found = hf.folder_settings(str(folder))
    assert (found.config, found.vocab_file, found.do_lower_case) == (CONFIG, str(folder / "vocab.txt"), False)
    mine = tmp_path / "mine.txt"  # the same tokens as the tokenizer reads them: other line ends, spaces
    mine.write_bytes(("\r\n".join(VOCAB[:3] + [f" {VOCAB[3]} "] + VOCAB[4:])).encode())
    assert hf.folder_settings(str(folder), vocab_file=str(mine), do_lower_case=False).vocab_file == str(mine)
    for tokens, where in ((VOCAB[:7] + ["other"] + VOCAB[8:], f"line 8 is 'other' vs {VOCAB[7]!r}"),
                          (VOCAB + ["extra"], "26 tokens vs 25"),
                          (VOCAB[:-1] + ["x", "y"], f"26 tokens vs 25, line 25 is 'x' vs {VOCAB[-1]!r}")):
        mine.write_text("\n".join(tokens) + "\n")
        with pytest.raises(ValueError) as error:
            hf.folder_settings(str(folder), vocab_file=str(mine))
        assert str(error.value) == f"vocab_file={mine} is not the vocabulary of {folder / 'vocab.txt'}: {where}"
    with pytest.raises(FileNotFoundError, match=r"^vocab_file=absent.txt: no such file$"):
        hf.folder_settings(str(folder), vocab_file="absent.txt")
    with pytest.raises(ValueError, match=r"^do_lower_case=True, but .*/tokenizer_config.json has do_lower_case=False$"):
        hf.folder_settings(str(folder), do_lower_case=True)
    with pytest.raises(ValueError, match=r"^bert_config_file=b.json: it does not match .* hidden_size 64 vs 32, hi"):
        hf.folder_settings(str(folder), tiny_config(hidden_size=64, hidden_act="relu"), "b.json")
    os.remove(folder / "vocab.txt")
    assert hf.folder_settings(str(folder)).vocab_file is None
    with pytest.raises(FileNotFoundError, match=r"^vocab_file is required \(.*hf has no vocab.txt: transformers 5"):
        hf.folder_settings(str(folder), needs_vocab=True)
    for fields, message in [
        ({"tokenizer_class": "BertJapaneseTokenizer"}, "tokenizer_class='BertJapaneseTokenizer' is not one of"),
        ({"do_lower_case": False, "strip_accents": True}, "strip_accents=True is not supported with do_lower_case"),
        ({"tokenize_chinese_chars": False}, "tokenize_chinese_chars=False is not supported"),
    ]:
        (folder / "tokenizer_config.json").write_text(json.dumps(fields))
        with pytest.raises(ValueError) as error:
            hf.folder_settings(str(folder))
        assert str(error.value).startswith(f"init_checkpoint: {folder / 'tokenizer_config.json'}: {message}")
    os.remove(folder / "tokenizer_config.json")
    assert hf.tokenizer_casing(str(folder)) is True  # transformers' default


def test_writing_replaces_only_a_folder_written_before_and_gives_the_umask(tmp_path):
    model = _model("BertModel")
    assert hf.check_output_folder(str(tmp_path / "out")) is False  # absent
    previous = os.umask(0o027)
    try:
        folder = _written(model, tmp_path)
    finally:
        os.umask(previous)
    assert {name: os.stat(folder / name).st_mode & 0o777 for name in os.listdir(folder)} == dict.fromkeys(
        ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"], 0o640)
    assert hf.check_output_folder(str(folder)) is True  # ours: replaced
    (tmp_path / "out2").mkdir()
    assert hf.check_output_folder(str(tmp_path / "out2")) is False  # empty
    _written(_model("BertForPreTraining"), tmp_path)
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["BertForPreTraining"]

    # Anything this writer does not write is someone else's: a model saved by transformers or
    # downloaded from the Hub (more files; transformers_version in its config.json), an extra file.
    hub = write_folder(tmp_path / "hub", _weights("BertModel"), CONFIG, "BertModel", vocab=VOCAB)
    (hub / "1_Pooling").mkdir()
    for name in ("README.md", "modules.json", "special_tokens_map.json", "tokenizer.json"):
        (hub / name).write_text("{}")
    just_config = write_folder(tmp_path / "just_config", _weights("BertModel"), CONFIG, "BertModel")
    os.remove(just_config / "model.safetensors")
    mine = _written(model, tmp_path / "mine")
    (mine / "notes.txt").write_text("mine")
    vocab_only = tmp_path / "vocab_only"
    vocab_only.mkdir()
    (vocab_only / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    cases = {
        # A sentence-transformers folder's modules.json and empty 1_Pooling are what an embedder's
        # conversion writes too: the rest of the Hub's folder is named.
        hub: "README.md, config.json with transformers_version, special_tokens_map.json, tokenizer.json",
        just_config: "config.json with transformers_version",
        mine: "notes.txt",
        vocab_only: "vocab.txt",
    }
    for other, held in cases.items():
        before = sorted(os.listdir(other))
        with pytest.raises(ValueError) as error:
            hf.write_folder(model, str(other), str(folder / "vocab.txt"), True)
        assert str(error.value) == (
            f"{other} is not empty and not the output of an earlier conversion (it holds {held}): name a new folder")
        assert sorted(os.listdir(other)) == before
    with pytest.raises(ValueError, match=r"README.md is a file, not a folder$"):
        hf.check_output_folder(str(hub / "README.md"))
    big = tmp_path / "big_vocab.txt"
    big.write_text("\n".join(VOCAB + ["extra"]) + "\n")
    with pytest.raises(ValueError, match="has 26 tokens but the model's vocab_size is 25"):
        hf.write_folder(model, str(tmp_path / "new"), str(big), True)
    assert sorted(os.listdir(tmp_path)) == ["big_vocab.txt", "hub", "just_config", "mine", "out", "out2", "vocab.txt",
                                            "vocab_only"]  # no temporaries


def test_encoder_outputs_from_a_folder_match_the_original_layout(tmp_path):
    weights = _weights("BertModel", seed=9)
    model = BertEncoder.from_bert_config(CONFIG)
    restore(model, str(write_folder(tmp_path / "hf", weights, CONFIG, "BertModel", prefix=False)))
    x = encoder_part(tiny_inputs(CONFIG))
    ours, theirs = model(x), _original(tmp_path, "BertModel", weights)(x)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np.asarray(ours[key]), np.asarray(theirs[key]))
