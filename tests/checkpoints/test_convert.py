"""Conversion without the script: which model an original checkpoint holds (by its variable
names), which model each of our sources holds (a run's record decides, for every task kind), the
global step and config that go with it, and errors naming the setting or the file."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertPretrainer,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)
from bert_tf.checkpoints import convert, save_keras_model
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config

H = tiny_config().hidden_size


def test_the_kind_an_original_checkpoint_holds_from_its_variable_names():
    encoder = {"bert/pooler/dense/kernel", "global_step"}
    assert convert.original_model_kind(encoder) == "encoder"
    assert convert.original_model_kind(encoder | {"cls/predictions/output_bias", "output_weights"}) == "pretrainer"
    assert convert.original_model_kind(encoder | {"output_weights", "output_bias"}) == "classifier"
    assert convert.original_model_kind(encoder | {"cls/squad/output_weights"}) == "squad"


def _google(tmp_path, name, with_heads=False, extra=None):
    weights = random_weights(original_shapes(tiny_config(), with_heads=with_heads), seed=5)
    return write_tf1_checkpoint(tmp_path / name / "bert_model.ckpt", {**weights, **(extra or {})}), weights


def test_the_model_built_for_an_original_checkpoint(tmp_path):
    config = tiny_config()
    pretrained, _ = _google(tmp_path, "pre", with_heads=True)
    headless, _ = _google(tmp_path, "headless")
    head = {"output_weights": np.ones((3, H), np.float32), "output_bias": np.zeros(3, np.float32)}
    classifier, _ = _google(tmp_path, "mnli", extra=head)
    squad, _ = _google(tmp_path, "squad", extra={"cls/squad/output_weights": np.ones((2, H), np.float32),
                                                 "cls/squad/output_bias": np.zeros(2, np.float32)})
    assert type(convert.original_model(pretrained, config)) is BertPretrainer
    assert type(convert.original_model(pretrained, config, "encoder")) is BertEncoder
    assert type(convert.original_model(headless, config)) is BertEncoder
    model = convert.original_model(classifier, config)
    assert type(model) is BertClassifier and model.num_classes == 3  # as many classes as the head has rows
    for source, asked in ((squad, "auto"), (headless, "squad"), (headless, "span_labeler")):
        assert type(convert.original_model(source, config, asked)) is BertSpanLabeler
    with pytest.raises(ValueError, match=rf"^model=classifier: {headless} has no output_weights \(not a fine-tuned "
                                         r"classifier\)$"):
        convert.original_model(headless, config, "classifier")
    with pytest.raises(FileNotFoundError, match=r"^checkpoint_to_convert: cannot read a TensorFlow checkpoint at"):
        convert.original_model(str(tmp_path / "nowhere" / "bert_model.ckpt"), config)


def test_to_keras_loads_the_weights_and_writes_the_file_or_fails_as_a_write(tmp_path):
    head = {"output_weights": np.arange(3 * H, dtype=np.float32).reshape(3, H) / 100,
            "output_bias": np.array([0.5, 0.0, -0.5], np.float32)}
    checkpoint, weights = _google(tmp_path, "mnli", extra=head)
    model = convert.original_model(checkpoint, tiny_config())
    report = convert.to_keras(model, checkpoint, str(tmp_path / "out" / "mnli.keras"))
    assert "output_weights" in report.loaded and "global_step" in report.ignored and report.unused == []
    loaded = keras.saving.load_model(str(tmp_path / "out" / "mnli.keras"))
    np.testing.assert_array_equal(np.asarray(loaded.classifier.dense.kernel), head["output_weights"].T)
    np.testing.assert_array_equal(
        np.asarray(loaded.encoder.pooler_dense.bias), weights["bert/pooler/dense/bias"]
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(convert.WriteFailed) as failed:
        convert.to_keras(model, checkpoint, str(tmp_path / "file" / "mnli.keras"))
    assert isinstance(failed.value.__cause__, OSError)
    # A mismatch is the loader's error, naming the checkpoint (not a failed write).
    with pytest.raises(ValueError, match=r"does not match the model"):
        convert.to_keras(BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=2), checkpoint,
                         str(tmp_path / "out" / "two.keras"))


# What each kind's run leaves beside its checkpoint, and the model it must come back as.
RUNS = {
    "classifier": ({"kind": "classifier", "task_name": "mnli", "labels": ["a", "b", "c"]}, BertClassifier),
    "squad": ({"model": "span_labeler", "task_name": "squad"}, BertSpanLabeler),  # an earlier release's record
    "ner": ({"kind": "ner", "task_name": "ner", "labels": ["O", "B-PER", "I-PER"]}, BertTokenClassifier),
    "swag": ({"kind": "swag", "task_name": "swag", "num_choices": 4}, BertMultipleChoice),
    "embedder": ({"kind": "embedder", "task_name": "sentence_embedding", "pooling": "max", "normalize": True},
                 BertSentenceEmbedder),
    "pretraining": (None, BertPretrainer),  # run_pretraining leaves no record
}


def _run(directory, record, model, step=7, config=None):
    """A folder as a training script leaves it: bert_config.json, the record, ckpt-<step>."""
    directory.mkdir()
    (directory / "bert_config.json").write_text(json.dumps(config or tiny_config().to_dict()))
    if record is not None:
        (directory / "fine_tuning_task.json").write_text(json.dumps(record))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(directory), 2, checkpoint_name="ckpt")
    return manager.save(checkpoint_number=step)


def _model_for(model_class):
    encoder = BertEncoder.from_bert_config(tiny_config())
    sizes = {BertClassifier: {"num_classes": 3}, BertTokenClassifier: {"num_classes": 3},
             BertMultipleChoice: {"num_choices": 4}, BertSentenceEmbedder: {"pooling": "max", "normalize": True}}
    return model_class(encoder, **sizes.get(model_class, {}))


@pytest.mark.parametrize("name", list(RUNS))
def test_a_training_run_is_read_as_the_model_its_record_names(tmp_path, name):
    record, model_class = RUNS[name]
    trained = _model_for(model_class)
    extra = {**tiny_config().to_dict(), "directionality": "bidi"}  # kept into the written config
    ckpt = _run(tmp_path / "run", record, trained, config=extra)
    for path in (str(tmp_path / "run"), ckpt):  # the folder (its latest) or the checkpoint
        source = convert.read_model(path)
        assert type(source.model) is model_class and source.global_step == 7 and source.warnings == ()
        assert source.bert_config.extra == {"directionality": "bidi"}
        for a, b in zip(source.model.weights, trained.weights, strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_to_original_writes_the_step_and_config_of_the_source(tmp_path):
    extra = {**tiny_config().to_dict(), "directionality": "bidi"}
    _run(tmp_path / "run", RUNS["classifier"][0], _model_for(BertClassifier), step=12, config=extra)
    source = convert.read_model(str(tmp_path / "run"))
    prefix = convert.to_original(source, str(tmp_path / "out" / "bert_model.ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    assert reader.get_tensor("global_step") == 12 and reader.get_variable_to_shape_map()["output_weights"] == [3, H]
    assert json.loads((tmp_path / "out" / "bert_config.json").read_text()) == extra
    convert.to_original(source, str(tmp_path / "again" / "bert_model.ckpt"), global_step=123)
    assert tf.train.load_checkpoint(str(tmp_path / "again" / "bert_model.ckpt")).get_tensor("global_step") == 123
    (tmp_path / "file").write_text("x")
    with pytest.raises(convert.WriteFailed) as failed:
        convert.to_original(source, str(tmp_path / "file" / "bert_model.ckpt"))
    assert isinstance(failed.value.__cause__, OSError)


def test_a_keras_file_and_the_errors_of_each_source(tmp_path):
    classifier = _model_for(BertClassifier)
    keras_file = save_keras_model(classifier, str(tmp_path / "tuned.keras"))
    source = convert.read_model(keras_file)
    assert type(source.model) is BertClassifier and (source.bert_config, source.global_step) == (None, None)

    given = tmp_path / "given.json"
    given.write_text(json.dumps({**tiny_config().to_dict(), "directionality": "bidi"}))
    assert convert.read_model(keras_file, str(given)).bert_config.extra == {"directionality": "bidi"}
    other = tmp_path / "other.json"
    other.write_text(json.dumps(tiny_config(hidden_size=16, intermediate_size=32).to_dict()))
    with pytest.raises(ValueError, match=rf"^bert_config_file={other} does not match the model: "):
        convert.read_model(keras_file, str(other))

    dense = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    dense.save(str(tmp_path / "dense.keras"))
    with pytest.raises(ValueError, match=r"^checkpoint_to_convert=.*dense.keras holds a Sequential, which has no "
                                         r"original layout; expected one of BertEncoder, BertPretrainer, "
                                         r"BertClassifier, BertSpanLabeler, BertTokenClassifier, BertMultipleChoice, "
                                         r"BertSentenceEmbedder$"):
        convert.read_model(str(tmp_path / "dense.keras"))
    with pytest.raises(FileNotFoundError, match=r"^checkpoint_to_convert: Keras model file '.*absent.keras' does not"):
        convert.read_model(str(tmp_path / "absent.keras"))

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "bert_config.json").write_text(json.dumps(tiny_config().to_dict()))
    with pytest.raises(ValueError, match=r"^checkpoint_to_convert=.*empty is a directory without a checkpoint$"):
        convert.read_model(str(tmp_path / "empty"))
    # The run's own config: what is wrong with it names the checkpoint (no --bert_config_file was given).
    ckpt = _run(tmp_path / "run", None, _model_for(BertPretrainer))
    (tmp_path / "run" / "bert_config.json").write_text(json.dumps({**tiny_config().to_dict(), "vocab_sizes": 1}))
    assert convert.read_model(ckpt).warnings[0].startswith("checkpoint_to_convert: BERT config file")
    (tmp_path / "run" / "bert_config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"^checkpoint_to_convert: BERT config file .* does not exist"):
        convert.read_model(ckpt)
    (tmp_path / "run" / "fine_tuning_task.json").write_text("[]")
    with pytest.raises(ValueError, match=rf"^checkpoint_to_convert={ckpt}: cannot read .*not a JSON object"):
        convert.read_model(ckpt, str(given))


def _hf_classifier(tmp_path):
    """A fine-tuned Hugging Face sentence classifier folder (3 labels, cased) and its weights."""
    from tests.hf_folder import write_folder
    from tests.tiny import VOCAB

    shapes = {**original_shapes(tiny_config(), with_heads=False), "output_weights": (3, H), "output_bias": (3,)}
    weights = random_weights(shapes, seed=8)
    labels = {"id2label": {"0": "neg", "1": "neutral", "2": "pos"}}
    folder = write_folder(tmp_path / "hf", weights, tiny_config(), "BertForSequenceClassification", vocab=VOCAB,
                          do_lower_case=False, **labels)
    return str(folder), weights


def test_a_hugging_face_folder_converts_to_keras_and_to_the_original_layout(tmp_path):
    folder, weights = _hf_classifier(tmp_path)
    model = convert.original_model(folder, None)  # its config.json names the model and sizes it
    assert type(model) is BertClassifier and model.num_classes == 3
    assert type(convert.original_model(folder, tiny_config(), "encoder")) is BertEncoder
    with pytest.raises(ValueError, match=rf"^model=squad: {folder} holds a classifier \(BertClassifier\)$"):
        convert.original_model(folder, None, "squad")
    with pytest.raises(ValueError, match=r"^bert_config_file does not match .*config.json: hidden_act 'relu' vs"):
        convert.original_model(folder, tiny_config(hidden_act="relu"))
    report = convert.to_keras(model, folder, str(tmp_path / "tuned.keras"))
    assert "classifier.weight" in report.loaded and report.unused == []
    loaded = keras.saving.load_model(str(tmp_path / "tuned.keras"))
    np.testing.assert_array_equal(np.asarray(loaded.classifier.dense.kernel), weights["output_weights"].T)

    source = convert.read_model(folder)
    assert type(source.model) is BertClassifier and source.record.labels == ("neg", "neutral", "pos")
    prefix = convert.to_original(source, str(tmp_path / "original" / "bert_model.ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    for name in ("output_weights", "bert/encoder/layer_1/intermediate/dense/kernel"):
        np.testing.assert_array_equal(reader.get_tensor(name), weights[name])


def test_to_hf_writes_a_run_or_a_keras_file_with_its_vocabulary_casing_and_labels(tmp_path):
    trained = _model_for(BertClassifier)
    _run(tmp_path / "run", RUNS["classifier"][0], trained)
    run = str(tmp_path / "run")
    source = convert.read_model(run)
    assert source.record.labels == ("a", "b", "c")
    with pytest.raises(ValueError, match=r"^vocab_file is required by direction=to_hf \(no vocab.txt beside "):
        convert.hf_tokenizer(source, run)
    from tests.tiny import write_vocab

    write_vocab(tmp_path / "run" / "vocab.txt")
    vocab, casing, record = convert.hf_tokenizer(source, run)
    assert (vocab, casing, record) == (str(tmp_path / "run" / "vocab.txt"), True, source.record)
    with pytest.raises(ValueError, match=r"^do_lower_case=False, but the model in .*run was fine-tuned with "
                                         r"do_lower_case=True$"):
        convert.hf_tokenizer(source, run, do_lower_case=False)
    assert convert.to_hf(source, str(tmp_path / "hf"), vocab, casing, record) == "BertForSequenceClassification"
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["id2label"] == {"0": "a", "1": "b", "2": "c"}
    again = convert.read_model(str(tmp_path / "hf"))
    for a, b in zip(again.model.weights, trained.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    # A .keras file in a run's folder takes the run's labels; elsewhere, the head's size alone.
    in_run = save_keras_model(trained, str(tmp_path / "run" / "tuned.keras"))
    assert convert.hf_tokenizer(convert.read_model(in_run), in_run)[2].labels == ("a", "b", "c")
    alone = save_keras_model(trained, str(tmp_path / "alone" / "tuned.keras"))
    _, casing, record = convert.hf_tokenizer(convert.read_model(alone), alone, vocab, do_lower_case=False)
    assert (casing, record) == (False, None)
    (tmp_path / "file").write_text("x")
    with pytest.raises(convert.WriteFailed):
        convert.to_hf(source, str(tmp_path / "file" / "hf"), vocab, casing, record)


@pytest.mark.parametrize("nsp", [True, False], ids=["with_nsp", "masked_lm_only"])
def test_a_pre_training_run_is_read_with_or_without_its_next_sentence_head(tmp_path, nsp):
    trained = BertPretrainer(BertEncoder.from_bert_config(tiny_config()), next_sentence_prediction=nsp)
    _run(tmp_path / "run", None, trained)
    source = convert.read_model(str(tmp_path / "run"))
    assert type(source.model) is BertPretrainer and source.model.next_sentence_prediction is nsp
    for a, b in zip(source.model.weights, trained.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
