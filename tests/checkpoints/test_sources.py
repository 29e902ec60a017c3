"""The files and model a checkpoint path stands for: the files named, else those beside the
checkpoint (whether the path names a run's folder, its ckpt-N or a .keras file in it); the
encoder or fine-tuned model of each kind of source; errors naming the setting or the path."""

import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import BertClassifier, BertEncoder
from bert_tf.checkpoints import save_keras_model, sources
from bert_tf.runs.record import RunRecord
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config, write_vocab


def _same(a, b):
    for x, y in zip(a.weights, b.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_named_file_else_the_one_beside_any_kind_of_checkpoint_path(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    vocab = write_vocab(run / "vocab.txt")
    other = write_vocab(tmp_path / "other_vocab.txt")
    # The folder, one of its checkpoints (a prefix: no file of that name) and a .keras file in it.
    for checkpoint in (str(run), str(run / "ckpt-3"), str(run / "model.keras")):
        assert sources.beside(checkpoint, "vocab.txt") == vocab
        assert sources.named_or_beside(None, "vocab_file", checkpoint, "vocab.txt") == vocab
        assert sources.named_or_beside(other, "vocab_file", checkpoint, "vocab.txt") == other
        assert sources.beside(checkpoint, "bert_config.json") is None
    assert sources.named_or_beside(None, "vocab_file", None, "vocab.txt") is None
    missing = tmp_path / "nowhere" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match=rf"^vocab_file={missing}: no such file$"):
        sources.named_or_beside(str(missing), "vocab_file", str(run), "vocab.txt")


def test_what_a_script_not_given_takes_from_beside_the_checkpoint_and_a_runs_casing(tmp_path):
    run, google = tmp_path / "run", tmp_path / "cased_L-2_H-32_A-4"
    for folder in (run, google):
        folder.mkdir()
        write_vocab(folder / "vocab.txt")
        (folder / "bert_config.json").write_text(json.dumps(tiny_config().to_dict()))
    RunRecord(kind="classifier", task_name="sst-2", do_lower_case=False).write(str(run))
    other = write_vocab(tmp_path / "other.txt")
    for checkpoint in (str(run), str(run / "ckpt-3")):  # a cased run: its casing, whatever vocabulary is named
        assert sources.files_beside(checkpoint) == {
            "vocab_file": str(run / "vocab.txt"), "bert_config_file": str(run / "bert_config.json"),
            "do_lower_case": False,
        }
        assert sources.files_beside(checkpoint, other, None, False)["vocab_file"] == other
        with pytest.raises(ValueError, match=rf"^do_lower_case=True, but the model in {run} was fine-tuned with "
                                             r"do_lower_case=False$"):
            sources.files_beside(checkpoint, do_lower_case=True)
    # Google's release folder: its files, and the casing given (True when not: the original's default).
    found = sources.files_beside(str(google / "bert_model.ckpt"), do_lower_case=False)
    assert found == {"vocab_file": str(google / "vocab.txt"), "bert_config_file": str(google / "bert_config.json"),
                     "do_lower_case": False}
    assert sources.files_beside(str(tmp_path / "bare" / "bert_model.ckpt")) == {
        "vocab_file": None, "bert_config_file": None, "do_lower_case": True}
    assert sources.files_beside(None, other) == {"vocab_file": other, "bert_config_file": None, "do_lower_case": True}


def test_a_config_is_read_with_its_errors_and_warnings_naming_the_setting(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(tiny_config().to_dict()))
    assert sources.read_config(str(good), "bert_config_file") == (tiny_config(), ())

    misspelt = tmp_path / "misspelt.json"
    misspelt.write_text(json.dumps({**tiny_config().to_dict(), "hidden_dropout_probs": 0.5}))
    config, warnings = sources.read_config(str(misspelt), "checkpoint_to_convert")
    assert config.hidden_dropout_prob == 0.1
    assert len(warnings) == 1
    assert warnings[0].startswith(f"checkpoint_to_convert: BERT config file '{misspelt}' has the unknown key")
    assert "'hidden_dropout_probs', one edit away from 'hidden_dropout_prob'" in warnings[0]

    with pytest.raises(FileNotFoundError, match=r"^bert_config_file: BERT config file '.*absent.json' does not exist"):
        sources.read_config(str(tmp_path / "absent.json"), "bert_config_file")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match=r"^bert_config_file: BERT config file '.*bad.json' is not valid JSON"):
        sources.read_config(str(tmp_path / "bad.json"), "bert_config_file")


def test_prefixed_puts_the_setting_before_value_and_file_errors_only():
    with pytest.raises(ValueError, match=r"^seq_length: too long$"):
        with sources.prefixed("seq_length: "):
            raise ValueError("too long")
    with pytest.raises(FileNotFoundError, match=r"^init_checkpoint=x: gone$"):
        with sources.prefixed("init_checkpoint=x: "):
            raise FileNotFoundError("gone")
    with pytest.raises(KeyError, match="^'k'$"):
        with sources.prefixed("init_checkpoint=x: "):
            raise KeyError("k")


def test_the_run_record_beside_a_checkpoint_of_the_kind_asked_for(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(ValueError, match=rf"^{run}: no fine_tuning_task.json in {run}; expected the output "
                                         r"folder of run_ner.py$"):
        sources.run_record_for(str(run), "ner")
    with pytest.raises(ValueError, match=r"expected a fine-tuning run's output folder$"):
        sources.run_record_for(str(run / "ckpt-2"))
    # A record written before kinds had one name.
    (run / "fine_tuning_task.json").write_text(json.dumps({"model": "span_labeler", "task_name": "squad"}))
    assert sources.run_record_for(str(run / "ckpt-2"), "squad").kind == "squad"
    with pytest.raises(ValueError, match=r"holds a squad model \(task 'squad'\), not a classifier: use the kind"):
        sources.run_record_for(str(run), "classifier")


def test_the_encoder_and_the_task_model_of_each_source(tmp_path):
    config = tiny_config()
    record = RunRecord(kind="classifier", task_name="mnli", labels=("a", "b", "c"))
    tuned = BertClassifier(BertEncoder.from_bert_config(config), num_classes=3)
    ckpt = tf.train.Checkpoint(model=tuned).save(str(tmp_path / "run" / "ckpt"))
    keras_file = save_keras_model(tuned, str(tmp_path / "tuned.keras"))

    model, used = sources.task_model(ckpt, record, config)
    assert type(model) is BertClassifier and used is config
    _same(model, tuned)
    model, used = sources.task_model(keras_file, record, None)  # the file brings its config
    assert used == config
    _same(model, tuned)
    for source in (ckpt, keras_file):
        _same(sources.encoder(source, config), tuned.encoder)  # a fine-tuned model's encoder

    with pytest.raises(ValueError, match=r"tuned.keras was saved with another config than the one given"):
        sources.encoder(keras_file, tiny_config(hidden_size=16, intermediate_size=32))
    encoder_file = save_keras_model(tuned.encoder, str(tmp_path / "encoder.keras"))
    with pytest.raises(ValueError, match=r"encoder.keras holds a BertEncoder, not a BertClassifier$"):
        sources.task_model(encoder_file, record, None)
    # Pre-trained weights only: no fine-tuned head to export.
    google = write_tf1_checkpoint(tmp_path / "google" / "bert_model.ckpt",
                                  random_weights(original_shapes(config, with_heads=False)))
    with pytest.raises(ValueError, match=r"bert_model.ckpt has no trained BertClassifier head \(output_bias, "
                                         r"output_weights\): use the output folder of a fine-tuning run"):
        sources.task_model(google, record, config)


def test_a_weight_holding_nan_in_a_keras_file_or_a_training_checkpoint_is_named(tmp_path):
    config = tiny_config()
    broken = BertEncoder.from_bert_config(config)
    kernel = broken.pooler_dense.kernel
    kernel.assign(np.where(np.arange(kernel.shape[1]) == 2, np.nan, np.asarray(kernel)))
    tuned = BertClassifier(broken, num_classes=3)  # saved as the loop saves a fine-tuned model
    ckpt = tf.train.Checkpoint(model=tuned).save(str(tmp_path / "run" / "ckpt"))
    keras_file = save_keras_model(tuned, str(tmp_path / "broken.keras"))
    record = RunRecord(kind="classifier", task_name="mnli", labels=("a", "b", "c"))
    for source in (ckpt, keras_file):
        for read, arguments in ((sources.encoder, (config,)), (sources.task_model, (record, config))):
            with pytest.raises(ValueError) as error:
                read(source, *arguments)
            assert str(error.value).startswith(f"{source}: weight ") and "\n" not in str(error.value)
            assert "pooler_dense/kernel holds NaN or infinity (32 of 1024 values)" in str(error.value)


def test_a_search_folder_is_refused_with_its_chosen_run_named(tmp_path):
    (tmp_path / "run").mkdir()
    sources.check_not_search(str(tmp_path / "run"), "init_checkpoint")  # a run folder as any other
    (tmp_path / "search.json").write_text("{}")
    with pytest.raises(ValueError, match=rf"^checkpoint_to_convert={tmp_path} holds a search \(search.json\): use "
                                         rf"checkpoint_to_convert={tmp_path / 'best'}, its chosen run$"):
        sources.check_not_search(str(tmp_path), "checkpoint_to_convert")


def test_a_vocabulary_named_for_a_hugging_face_folder_must_be_its_own(tmp_path):
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # a Hugging Face folder (its config is not read here)
    write_vocab(folder / "vocab.txt")
    same = write_vocab(tmp_path / "same.txt")
    other = write_vocab(tmp_path / "other.txt", ["[PAD]", "[CLS]", "[UNK]"])
    for checkpoint in (str(tmp_path / "run"), str(folder)):  # beside a run's checkpoint, another is taken
        assert sources.named_or_beside(same, "vocab_file", checkpoint, "vocab.txt") == same
    assert sources.named_or_beside(other, "vocab_file", str(tmp_path / "run"), "vocab.txt") == other
    with pytest.raises(ValueError, match=rf"^vocab_file={other} is not the vocabulary of {folder / 'vocab.txt'}: 3 "
                                         r"tokens vs 25, line 2 is '\[CLS\]' vs '\[UNK\]'$"):
        sources.named_or_beside(other, "vocab_file", str(folder), "vocab.txt")
