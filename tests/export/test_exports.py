"""What an export reads, without the script: the files named, else those beside the checkpoint
(Google's layout, a run's folder or ckpt-N, a .keras file); for every task kind the run's model,
casing and length, written by the kind's exporter from the registry; errors naming the setting."""

import json
import types

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)
from bert_tf.checkpoints import save_keras_model
from bert_tf.export import exports
from bert_tf.export.serving import ServingOptions
from bert_tf.runs import registry
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config, write_vocab

# Each kind's run record (as its script writes it) and the model its export must serve.
RUNS = {
    "classifier": ({"kind": "classifier", "task_name": "mnli", "labels": ["a", "b", "c"], "max_seq_length": 16},
                   BertClassifier, {"num_classes": 3}),
    "squad": ({"kind": "squad", "task_name": "squad", "max_seq_length": 20, "max_query_length": 6},
              BertSpanLabeler, {}),
    "ner": ({"kind": "ner", "task_name": "ner", "labels": ["O", "B-X"], "max_seq_length": 8, "do_lower_case": False},
            BertTokenClassifier, {"num_classes": 2}),
    "swag": ({"kind": "swag", "task_name": "swag", "num_choices": 4, "max_seq_length": 12},
             BertMultipleChoice, {"num_choices": 4}),
    "embedder": ({"kind": "embedder", "task_name": "sentence_embedding", "pooling": "cls", "normalize": True,
                  "similarity_scale": 20.0, "max_seq_length": 10}, BertSentenceEmbedder,
                 {"pooling": "cls", "normalize": True}),
}


def _weights_equal(a, b):
    for x, y in zip(a.weights, b.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _run(directory, record, model, files=("bert_config.json", "vocab.txt")):
    directory.mkdir()
    (directory / "fine_tuning_task.json").write_text(json.dumps(record))
    if "bert_config.json" in files:
        (directory / "bert_config.json").write_text(json.dumps(tiny_config().to_dict()))
    if "vocab.txt" in files:
        write_vocab(directory / "vocab.txt")
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(directory), 2, checkpoint_name="ckpt")
    return manager.save(checkpoint_number=3)


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    google = root / "uncased_tiny"
    google.mkdir()
    (google / "bert_config.json").write_text(json.dumps(tiny_config().to_dict()))
    write_vocab(google / "vocab.txt")
    weights = random_weights(original_shapes(tiny_config(), with_heads=False), seed=1)
    write_tf1_checkpoint(google / "bert_model.ckpt", weights)
    models, runs = {}, {}
    for name, (record, model_class, sizes) in RUNS.items():
        models[name] = model_class(BertEncoder.from_bert_config(tiny_config()), **sizes)
        runs[name] = root / f"{name}_run"
        _run(runs[name], record, models[name])
    alone = root / "alone"  # a .keras file with nothing beside it
    alone.mkdir()
    save_keras_model(models["classifier"], str(alone / "tuned.keras"))
    return types.SimpleNamespace(root=root, google=google, weights=weights, models=models, runs=runs,
                                 keras_file=str(alone / "tuned.keras"))


def test_the_encoder_of_googles_layout_a_run_and_a_keras_file(places):
    export = exports.read("encoder", str(places.google / "bert_model.ckpt"))
    assert (export.vocab_file, export.do_lower_case, export.warnings) == (str(places.google / "vocab.txt"), True, ())
    assert type(export.model) is BertEncoder
    np.testing.assert_array_equal(np.asarray(export.model.pooler_dense.bias), places.weights["bert/pooler/dense/bias"])
    # A fine-tuning run's folder and its ckpt-N: its encoder, config and vocabulary.
    for checkpoint in (str(places.runs["ner"]), str(places.runs["ner"] / "ckpt-3")):
        export = exports.read("encoder", checkpoint, do_lower_case=False)
        assert (export.vocab_file, export.do_lower_case) == (str(places.runs["ner"] / "vocab.txt"), False)
        _weights_equal(export.model, places.models["ner"].encoder)
    # A .keras file carries its config; without a vocabulary no casing goes into the export.
    export = exports.read("encoder", places.keras_file)
    assert (export.vocab_file, export.do_lower_case) == (None, None)
    _weights_equal(export.model, places.models["classifier"].encoder)


def test_what_an_encoder_export_cannot_do_without(places, tmp_path):
    ckpt = write_tf1_checkpoint(tmp_path / "bare" / "bert_model.ckpt", places.weights)
    required = r"^bert_config_file is required \(no bert_config.json beside init_checkpoint\)$"
    with pytest.raises(ValueError, match=required):
        exports.read("encoder", ckpt)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(tiny_config(hidden_size=16, intermediate_size=32).to_dict()))
    with pytest.raises(ValueError, match=rf"^init_checkpoint={ckpt}: checkpoint .* does not match the model"):
        exports.read("encoder", ckpt, bert_config_file=str(other))
    with pytest.raises(FileNotFoundError, match=r"^vocab_file=.*nowhere.txt: no such file$"):
        exports.read("encoder", ckpt, str(places.google / "bert_config.json"), str(tmp_path / "nowhere.txt"))
    with pytest.raises(ValueError, match=r"^init_checkpoint is required by export_type=encoder$"):
        exports.read("encoder")


@pytest.mark.parametrize("kind", list(RUNS))
def test_every_kind_exports_its_runs_model_through_the_registrys_exporter(places, kind, monkeypatch, tmp_path):
    assert set(RUNS) == set(registry.KINDS)  # every kind is covered here
    record, model_class, _ = RUNS[kind]
    export = exports.read(kind, str(places.runs[kind]))
    assert type(export.model) is model_class and export.record.kind == kind
    assert export.seq_length == record["max_seq_length"]  # the length it was fine-tuned at
    assert export.do_lower_case == record.get("do_lower_case", True)
    assert export.vocab_file == str(places.runs[kind] / "vocab.txt")
    _weights_equal(export.model, places.models[kind])
    calls = []
    monkeypatch.setattr(registry.TaskKind, "export", lambda self, *args, **kwargs: calls.append((self.name, kwargs)))
    what = export.write(str(tmp_path / "out"), overwrite=True)
    assert calls == [(kind, {"vocab_file": export.vocab_file, "seq_length": record["max_seq_length"],
                             "export_dir": str(tmp_path / "out"), "overwrite": True,
                             "serving": ServingOptions(length_bucket=1, jit_compile=False, quantize=None)})]
    assert what == (f"a {model_class.__name__} of task {record['task_name']!r} (seq_length {record['max_seq_length']}; "
                    "the request's exact length, padding skipped)")
    assert exports.read(kind, str(places.runs[kind] / "ckpt-3"), seq_length=6).seq_length == 6
    # The serving options reach the exporter as given.
    serving = ServingOptions(length_bucket=None, jit_compile=True, quantize="int8")
    calls.clear()
    what = exports.read(kind, str(places.runs[kind]), serving=serving).write(str(tmp_path / "out"), overwrite=True)
    assert calls[0][1]["serving"] is serving and what.endswith("; fixed length, XLA, int8 Dense weights)")


def test_serving_options_default_to_xla_exactly_with_int8_weights():
    assert ServingOptions().jit_compile is False and ServingOptions(quantize="int8").jit_compile is True
    assert ServingOptions(quantize="int8", jit_compile=False).jit_compile is False
    assert ServingOptions(jit_compile=True).jit_compile is True


def test_serving_options_fail_with_the_setting_at_fault(places):
    with pytest.raises(ValueError, match=r"^length_bucket=0 must be a positive integer$"):
        ServingOptions(length_bucket=0)
    with pytest.raises(ValueError, match=r"^quantize='int4' is not one of int8$"):
        ServingOptions(quantize="int4")
    google, vocab = str(places.google / "bert_model.ckpt"), str(places.google / "vocab.txt")
    with pytest.raises(ValueError, match=r"^quantize=int8 is for the task exports \(classifier, .*\), not "
                                         r"export_type=encoder$"):
        exports.read("encoder", google, serving=ServingOptions(quantize="int8"))
    with pytest.raises(ValueError, match=r"^jit_compile=True is for the task exports .* not export_type=preprocessor$"):
        exports.read("preprocessor", vocab_file=vocab, serving=ServingOptions(jit_compile=True))
    with pytest.raises(ValueError, match=r"^mixed_precision=bf16 is for the task exports .* not export_type=encoder$"):
        exports.read("encoder", google, serving=ServingOptions(mixed_precision="bf16"))


def test_a_task_export_checks_the_run_against_the_settings(places, tmp_path):
    squad, ner = str(places.runs["squad"]), str(places.runs["ner"])
    with pytest.raises(ValueError, match=rf"^init_checkpoint={squad}: {squad} holds a squad model \(task 'squad'\), "
                                         r"not a classifier"):
        exports.read("classifier", squad)
    google = str(places.google / "bert_model.ckpt")
    with pytest.raises(ValueError, match=rf"^init_checkpoint={google}: .*no fine_tuning_task.json .*run_swag.py$"):
        exports.read("swag", google)
    with pytest.raises(ValueError, match=rf"^do_lower_case=True, but the model in {ner} was fine-tuned with "
                                         r"do_lower_case=False$"):
        exports.read("ner", ner, do_lower_case=True)
    assert exports.read("ner", ner, do_lower_case=False).do_lower_case is False
    with pytest.raises(ValueError, match=r"^seq_length: Cannot use sequence length 64 because .* up to sequence "
                                         r"length 24"):
        exports.read("squad", squad, seq_length=64)
    assert exports.read("squad", squad, max_query_length=4).options == {"max_query_length": 4}
    with pytest.raises(ValueError, match=r"^max_query_length is not a setting of export_type=ner$"):
        exports.read("ner", ner, max_query_length=4)
    # A run's folder without its vocabulary (and one named that does not exist).
    novocab = tmp_path / "novocab"
    _run(novocab, RUNS["swag"][0], places.models["swag"], files=("bert_config.json",))
    required = rf"^vocab_file is required \(no vocab.txt beside init_checkpoint={novocab}\)$"
    with pytest.raises(ValueError, match=required):
        exports.read("swag", str(novocab))
    with pytest.raises(FileNotFoundError, match=r"^vocab_file=.*nowhere.txt: no such file$"):
        exports.read("swag", str(novocab), vocab_file=str(tmp_path / "nowhere.txt"))
    assert exports.read("swag", str(novocab), vocab_file=str(places.google / "vocab.txt")).vocab_file.endswith(
        "uncased_tiny/vocab.txt"
    )


def test_the_preprocessor_needs_a_vocabulary_and_room_for_a_pair(places, tmp_path):
    vocab = str(places.google / "vocab.txt")
    export = exports.read("preprocessor", vocab_file=vocab)
    assert (export.vocab_file, export.do_lower_case, export.seq_length, export.model) == (vocab, True, 128, None)
    assert exports.read("preprocessor", vocab_file=vocab, do_lower_case=False, seq_length=3).seq_length == 3
    with pytest.raises(ValueError, match=r"^seq_length=2 leaves no room for \[CLS\] A \[SEP\] B \[SEP\]$"):
        exports.read("preprocessor", vocab_file=vocab, seq_length=2)
    with pytest.raises(FileNotFoundError, match=r"^vocab_file=.*nowhere.txt: no such file$"):
        exports.read("preprocessor", vocab_file=str(tmp_path / "nowhere.txt"))
    with pytest.raises(ValueError, match=r"^vocab_file is required by export_type=preprocessor$"):
        exports.read("preprocessor")


def test_the_encoder_and_preprocessor_are_written_by_their_own_exporters(places, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(exports, "export_encoder", lambda *args: calls.append(("encoder", args)))
    monkeypatch.setattr(exports, "export_preprocessor", lambda *args: calls.append(("preprocessor", args)))
    encoder = exports.read("encoder", str(places.google / "bert_model.ckpt"), do_lower_case=False)
    assert encoder.write("out") == "a BertEncoder (2 layers, hidden 32)"
    vocab = str(places.google / "vocab.txt")
    assert exports.read("preprocessor", vocab_file=vocab, seq_length=16).write("pre", overwrite=True) == (
        f"the preprocessor of {vocab} (do_lower_case=True, seq_length 16; the request's exact length)"
    )
    fixed = exports.read("preprocessor", vocab_file=vocab, serving=ServingOptions(length_bucket=None))
    assert fixed.write("fixed").endswith("(do_lower_case=True, seq_length 128; fixed length)")
    assert calls == [("encoder", (encoder.model, "out", vocab, False, False)),
                     ("preprocessor", (vocab, True, "pre", 16, True, 1)),
                     ("preprocessor", (vocab, True, "fixed", 128, False, None))]


def test_the_casing_given_must_fit_a_released_checkpoints_name_when_the_export_records_it(tmp_path):
    released = tmp_path / "cased_L-12_H-768_A-12"
    released.mkdir()
    checkpoint = str(released / "bert_model.ckpt")
    exports.check_casing("encoder", checkpoint, None, True)  # no vocabulary: no casing recorded
    write_vocab(released / "vocab.txt")
    with pytest.raises(ValueError, match=r"^You passed in `--do_lower_case=True`.*seems to be a cased model"):
        exports.check_casing("encoder", checkpoint, None, True)
    exports.check_casing("encoder", checkpoint, None, False)
    for other in ("preprocessor", *registry.KINDS):  # the run's casing, or no checkpoint at all
        exports.check_casing(other, checkpoint, str(released / "vocab.txt"), True)


def test_a_hugging_face_folder_exports_as_an_encoder_or_as_its_fine_tuned_task(tmp_path):
    from tests.hf_folder import write_folder
    from tests.tiny import VOCAB

    h = tiny_config().hidden_size
    shapes = {**original_shapes(tiny_config(), with_heads=False), "output_weights": (2, h), "output_bias": (2,)}
    folder = str(write_folder(tmp_path / "hf", random_weights(shapes, seed=2), tiny_config(),
                              "BertForTokenClassification", vocab=VOCAB, do_lower_case=False,
                              id2label={"0": "O", "1": "B-X"}))
    # transformers' token classifier has no pooler: an encoder (whose pooled_output would be untrained) says so.
    with pytest.raises(ValueError, match=r"^init_checkpoint=.*hf: .*bert.pooler.dense.weight is missing"):
        exports.read("encoder", folder)
    export = exports.read("ner", folder, seq_length=12)
    assert type(export.model) is BertTokenClassifier and export.record.labels == ("O", "B-X")
    assert (export.do_lower_case, export.seq_length, export.record.label_kind) == (False, 12, "token")
    with pytest.raises(ValueError, match=r"^init_checkpoint=.*hf holds a ner model \(task 'hf'\), not a classifier"):
        exports.read("classifier", folder)
    folder = str(write_folder(tmp_path / "pre", random_weights(original_shapes(tiny_config()), seed=3), tiny_config(),
                              "BertForPreTraining", vocab=VOCAB, do_lower_case=False))
    with pytest.warns(UserWarning, match=r"7 weight\(s\) .* are not used by BertEncoder: cls.predictions.bias"):
        export = exports.read("encoder", folder)  # config, vocabulary and casing from the folder
    assert (export.vocab_file, export.do_lower_case) == (f"{folder}/vocab.txt", False)
    with pytest.raises(ValueError, match=r"^do_lower_case=True, but .*pre/tokenizer_config.json has do_lower_case"):
        exports.read("encoder", folder, do_lower_case=True)
    with pytest.raises(ValueError, match=r"^init_checkpoint=.*pre is a Hugging Face folder of no fine-tuning task"):
        exports.read("swag", folder)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(tiny_config(hidden_size=16, intermediate_size=32).to_dict()))
    with pytest.raises(ValueError, match=rf"^bert_config_file={other}: it does not match .*: hidden_size 16 vs 32"):
        exports.read("encoder", folder, bert_config_file=str(other))
