"""The task registry and the run record: one name per kind, records of earlier releases read."""

import json

import pytest

from bert_tf.models import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)
from bert_tf.runs import record as run_record
from bert_tf.runs import registry
from bert_tf.runs.record import RunRecord
from tests.tiny import tiny_config

# The kinds as the scripts, folders and export types name them, with their models and heads.
EXPECTED = {
    "classifier": (BertClassifier, "run_classifier.py", ("output_weights", "output_bias")),
    "squad": (BertSpanLabeler, "run_squad.py", ("cls/squad/output_weights", "cls/squad/output_bias")),
    "ner": (BertTokenClassifier, "run_ner.py", ("output_weights", "output_bias")),
    "swag": (BertMultipleChoice, "run_swag.py", ("output_weights", "output_bias")),
    "embedder": (BertSentenceEmbedder, "run_sentence_embedding.py", ()),  # no head: the encoder's weights alone
}


def test_the_old_homes_below_tasks_still_give_every_name_with_a_warning_saying_where_it_went():
    import importlib

    for module, new, names in (("registry", registry, ("KINDS", "get", "TaskKind")),
                               ("record", run_record, ("RunRecord", "read", "FILE_NAME", "RESUMED_FIELDS"))):
        old = importlib.import_module(f"bert_tf.tasks.{module}")
        for name in names:
            with pytest.warns(DeprecationWarning, match=rf"bert_tf.tasks.{module}.{name} moved to "
                                                         rf"bert_tf.runs.{module}.{name}"):
                assert getattr(old, name) is getattr(new, name)
        with pytest.raises(AttributeError):
            old.never_there  # noqa: B018 - an attribute read is the test


def test_every_kind_names_its_parts():
    assert set(registry.KINDS) == set(EXPECTED)
    for name, (model_class, script, heads) in EXPECTED.items():
        kind = registry.get(name)
        assert (kind.model_class, kind.script, kind.head_names) == (model_class, script, heads)
        assert kind.task_class().__name__ == f"{name.capitalize()}Task"
        assert callable(kind.export) and kind.exporter.startswith(f"bert_tf.tasks.{name}.export:")


def test_models_are_sized_from_the_record():
    encoder = BertEncoder.from_bert_config(tiny_config())
    record = RunRecord(kind="classifier", task_name="mnli", labels=("a", "b", "c"))
    assert registry.get("classifier").build_model(record, encoder).num_classes == 3
    regression = RunRecord(kind="classifier", task_name="sts-b", label_kind="regression")
    assert registry.get("classifier").build_model(regression, encoder).num_classes == 1
    swag = RunRecord(kind="swag", task_name="swag", num_choices=5)
    assert registry.get("swag").build_model(swag, encoder).num_choices == 5
    embedder = RunRecord(kind="embedder", task_name="sentence_embedding", options={"pooling": "cls", "normalize": True})
    model = registry.get("embedder").build_model(embedder, encoder)
    assert (model.pooling, model.normalize) == ("cls", True)
    # A record that says nothing of the pooling (a Google checkpoint converted): the mean, not normalized.
    model = registry.get("embedder").build_model(RunRecord(kind="embedder", task_name="x"), encoder)
    assert (model.pooling, model.normalize) == ("mean", False)
    model = registry.get("ner").build_model(RunRecord(kind="ner", task_name="ner", labels=("O", "B-X")), encoder)
    assert registry.of_model(model).name == "ner" and registry.of_model(encoder) is None


def test_record_round_trip_keeps_its_kinds_fields_only(tmp_path):
    record = RunRecord(kind="squad", task_name="squad", do_lower_case=False, max_seq_length=384, doc_stride=64)
    record.write(tmp_path)
    written = json.loads((tmp_path / run_record.FILE_NAME).read_text())
    assert written == {
        "kind": "squad", "task_name": "squad", "do_lower_case": False, "max_seq_length": 384,
        "version_2_with_negative": False, "doc_stride": 64, "max_query_length": 64,
    }
    assert run_record.read(tmp_path) == record
    assert run_record.read(tmp_path / "nowhere") is None


@pytest.mark.parametrize("old, kind", [("span_labeler", "squad"), ("token_classifier", "ner"),
                                       ("multiple_choice", "swag"), ("classifier", "classifier")])
def test_records_of_earlier_releases_read(tmp_path, old, kind):
    (tmp_path / run_record.FILE_NAME).write_text(json.dumps({"task_name": "t", "model": old, "labels": ["a", "b"]}))
    assert run_record.read(tmp_path).kind == kind


def test_bad_records_name_the_file(tmp_path):
    path = tmp_path / run_record.FILE_NAME
    path.write_text(json.dumps({"task_name": "t", "kind": "ner", "colour": "red"}))
    with pytest.raises(ValueError, match=r"fine_tuning_task.json: unknown field\(s\) colour"):
        run_record.read(tmp_path)
    path.write_text(json.dumps({"task_name": "t", "kind": "translation"}))
    with pytest.raises(ValueError, match="unknown fine-tuning task kind 'translation'; known: classifier, squad"):
        run_record.read(tmp_path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        run_record.read(tmp_path)


def test_a_lora_runs_record_keeps_its_adapters_and_others_do_not_write_them(tmp_path):
    record = RunRecord(kind="swag", task_name="swag", lora_rank=8)
    assert record.lora_alpha == 8.0  # not given: the rank's, a scale of 1
    record.write(tmp_path / "lora")
    written = json.loads((tmp_path / "lora" / run_record.FILE_NAME).read_text())
    assert written == {"kind": "swag", "task_name": "swag", "do_lower_case": True, "max_seq_length": 128,
                       "num_choices": 4, "lora_rank": 8, "lora_alpha": 8.0}
    assert run_record.read(tmp_path / "lora") == record
    assert run_record.adapters(str(tmp_path / "lora" / "ckpt-3")) == (8, 8.0)
    RunRecord(kind="swag", task_name="swag").write(tmp_path / "full")  # the file of a run without LoRA is as before
    assert "lora_rank" not in json.loads((tmp_path / "full" / run_record.FILE_NAME).read_text())
    assert run_record.adapters(str(tmp_path / "full")) is None and run_record.adapters(str(tmp_path / "none")) is None
    with pytest.raises(ValueError, match=r"^fine_tuning_task.json: lora_alpha=2.0 is given without lora_rank"):
        RunRecord.from_dict({"kind": "swag", "task_name": "swag", "lora_alpha": 2.0})


def test_grouping_by_length_is_recorded_and_a_resumed_training_must_keep_it(tmp_path):
    from bert_tf.tasks.classifier.run import fields_to_match as classifier_fields
    from bert_tf.tasks.ner.run import fields_to_match as ner_fields
    from bert_tf.tasks.squad.run import fields_to_match as squad_fields
    from bert_tf.tasks.swag.run import fields_to_match as swag_fields
    from bert_tf.training.run import check_earlier_run

    grouped = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"), group_by_length=True)
    assert grouped.to_dict()["group_by_length"] is True
    assert "group_by_length" not in RunRecord(kind="classifier", task_name="mrpc").to_dict()  # files as before
    assert RunRecord.from_dict(grouped.to_dict()) == grouped
    grouped.write(tmp_path)
    plain = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"))
    with pytest.raises(ValueError, match="with group_by_length True, not False"):
        check_earlier_run(str(tmp_path), plain, classifier_fields(True))
    assert check_earlier_run(str(tmp_path), plain, classifier_fields(False)) == []  # evaluating: any batch order
    for fields in (ner_fields, squad_fields, swag_fields):
        assert "group_by_length" in fields(True) and "group_by_length" not in fields(False)


def test_a_run_trained_further_must_keep_its_length_but_may_be_evaluated_at_another(tmp_path):
    from bert_tf.tasks.classifier.run import fields_to_match as classifier_fields
    from bert_tf.tasks.ner.run import fields_to_match as ner_fields
    from bert_tf.tasks.squad.run import fields_to_match as squad_fields
    from bert_tf.tasks.swag.run import fields_to_match as swag_fields
    from bert_tf.training.run import check_earlier_run

    RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"), max_seq_length=32).write(tmp_path)
    longer = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"), max_seq_length=64)
    with pytest.raises(ValueError, match=rf"^output_dir={tmp_path} holds a run of task 'mrpc' with max_seq_length 32, "
                                         "not 64: use another output_dir"):
        check_earlier_run(str(tmp_path), longer, classifier_fields(True))
    # Evaluating or predicting: the inputs are cut differently, which is said.
    assert check_earlier_run(str(tmp_path), longer, classifier_fields(False)) == [
        f"max_seq_length=64, but the model in {tmp_path} was fine-tuned with 32: inputs are cut differently"]
    for fields in (ner_fields, squad_fields, swag_fields):
        assert "max_seq_length" in fields(True) and "max_seq_length" not in fields(False)


def _with_own_field(name="wordscore"):
    """A kind with a field RunRecord does not have (`score_scale`), registered for the test."""
    from bert_tf.models import BertClassifier

    class Scorer(BertClassifier):
        pass

    return registry.TaskKind(
        name=name, script=f"run_{name}.py", model_class=Scorer, head_layer="classifier",
        head_names=("output_weights", "output_bias"), record_fields=("score_scale", "buckets"),
        task="m:T", exporter="m:e", fine_tuning="m:F",
    )


@pytest.fixture
def own_kind(monkeypatch):
    monkeypatch.setattr(registry, "KINDS", dict(registry.KINDS))  # the registry as it was, after the test
    return registry.register(_with_own_field())


def test_a_kinds_own_fields_live_in_options_and_round_trip(own_kind, tmp_path):
    record = RunRecord(kind="wordscore", task_name="w", options={"score_scale": 2.5, "buckets": [1, 2]})
    assert record.score_scale == 2.5 and record.buckets == (1, 2)  # lists become tuples, as labels do
    written = record.to_dict()
    assert written["score_scale"] == 2.5 and written["buckets"] == [1, 2] and "options" not in written
    record.write(tmp_path)
    again = run_record.read(str(tmp_path))
    assert again == record and again.options == {"score_scale": 2.5, "buckets": (1, 2)}
    unset = RunRecord(kind="wordscore", task_name="w")
    assert unset.score_scale is None and "score_scale" not in unset.to_dict()  # a field an older file lacks
    with pytest.raises(AttributeError, match="no field 'nothing'"):
        unset.nothing  # noqa: B018
    with pytest.raises(ValueError, match=r"^pooling: not a field of kind wordscore \(its fields: score_scale, bu"):
        RunRecord(kind="wordscore", task_name="w", options={"pooling": "mean"})
    with pytest.raises(ValueError, match=r"^f.json: unknown field\(s\) pooling"):
        RunRecord.from_dict({"kind": "wordscore", "task_name": "w", "pooling": "mean"}, "f.json")


def test_register_refuses_a_taken_name_or_model_and_an_incomplete_kind(own_kind):
    import dataclasses

    assert registry.get("wordscore") is own_kind
    with pytest.raises(ValueError, match="'classifier' is already a kind"):
        registry.register(dataclasses.replace(own_kind, name="classifier"))
    with pytest.raises(ValueError, match="span_labeler are another kind's"):
        registry.register(dataclasses.replace(own_kind, name="new", legacy_names=("span_labeler",)))
    with pytest.raises(ValueError, match="its model class Scorer is kind wordscore's"):
        registry.register(dataclasses.replace(own_kind, name="other"))
    with pytest.raises(ValueError, match="fine_tuning"):
        registry.register(dataclasses.replace(own_kind, name="bare", model_class=type("M", (), {}), fine_tuning=""))


def test_a_record_takes_only_its_kinds_fields_and_an_earlier_releases_flat_file_still_reads(tmp_path):
    with pytest.raises(ValueError, match=r"^labels: not a field of kind squad \(its fields: version_2_with_negative"):
        RunRecord(kind="squad", task_name="squad", labels=("a",))
    with pytest.raises(AttributeError, match="no field 'max_query_length'"):
        RunRecord(kind="classifier", task_name="mrpc").max_query_length  # noqa: B018
    # The first releases wrote one flat record with every kind's fields: another kind's are not this run's.
    flat = {"task_name": "squad", "model": "span_labeler", "labels": [], "label_kind": "single", "pair": True,
            "doc_stride": 64, "num_choices": 4}
    (tmp_path / run_record.FILE_NAME).write_text(json.dumps(flat))
    found = run_record.read(tmp_path)
    assert found.kind == "squad" and found.doc_stride == 64 and found.to_dict() == {
        "kind": "squad", "task_name": "squad", "do_lower_case": True, "max_seq_length": 128,
        "version_2_with_negative": False, "doc_stride": 64, "max_query_length": 64}
    # A file of this version is its kind's: another kind's field there is an error, not dropped.
    (tmp_path / run_record.FILE_NAME).write_text(json.dumps({**found.to_dict(), "labels": []}))
    with pytest.raises(ValueError, match=r"unknown field\(s\) labels"):
        run_record.read(tmp_path)


def test_the_record_is_written_from_the_tasks_settings_and_read_back_into_them(tmp_path):
    import dataclasses

    from bert_tf.tasks import embedder, squad

    for settings_class, values in ((squad.Settings, {"doc_stride": 32, "max_query_length": 20,
                                                     "version_2_with_negative": True, "max_seq_length": 96}),
                                   (embedder.Settings, {"pooling": "cls", "normalize": True, "similarity_scale": 5.0,
                                                        "do_lower_case": False})):
        kind = registry.get(settings_class.kind)
        # A field marked FROM_SETTINGS defaults to its setting's default: the two cannot drift.
        defaults = {f.name: f.default for f in dataclasses.fields(settings_class)}
        assert kind.settings_fields and all(kind.record_defaults[n] == defaults[n] for n in kind.settings_fields)
        # ... and those are the original's flag defaults (run_squad.py), and sentence-transformers'.
        assert {n: kind.record_defaults[n] for n in kind.settings_fields} == {
            "squad": {"version_2_with_negative": False, "doc_stride": 128, "max_query_length": 64},
            "embedder": {"pooling": None, "normalize": False, "similarity_scale": 20.0, "max_windows": 1,
                         "doc_stride": None}}[kind.name]
        settings = settings_class(output_dir=str(tmp_path / kind.name), **values)
        recorded = {name: getattr(settings, name) for name in ("do_lower_case", "max_seq_length",
                                                               *kind.settings_fields)}
        RunRecord(kind=kind.name, task_name="t", **recorded).write(tmp_path / kind.name)
        again = dataclasses.replace(settings_class(), **run_record.read(tmp_path / kind.name).settings_values())
        assert {name: getattr(again, name) for name in recorded} == recorded


def test_resuming_into_a_run_of_another_kind_names_the_kinds(tmp_path):
    from bert_tf.training.run import check_earlier_run

    RunRecord(kind="squad", task_name="squad").write(tmp_path)
    mrpc = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"))
    with pytest.raises(ValueError, match=r"holds a run of task 'squad' with kind 'squad', not 'classifier'"):
        check_earlier_run(str(tmp_path), mrpc, ("label_kind", "labels"))


def test_a_record_without_a_kind_is_the_first_releases_classifier_and_an_empty_kind_is_refused(tmp_path):
    (tmp_path / run_record.FILE_NAME).write_text(json.dumps({"task_name": "mrpc", "labels": ["0", "1"]}))
    assert run_record.read(tmp_path).kind == "classifier"
    for bad in ({"task_name": "t", "kind": ""}, {"task_name": "t", "model": ""}):
        (tmp_path / run_record.FILE_NAME).write_text(json.dumps(bad))
        with pytest.raises(ValueError, match="unknown fine-tuning task kind ''"):
            run_record.read(tmp_path)


def test_the_windows_settings_are_kept_by_a_run_that_reads_more_than_one_window_only(tmp_path):
    one = RunRecord(kind="classifier", task_name="sst-2", labels=("0", "1"))
    assert {"max_windows", "doc_stride", "window_pooling"}.isdisjoint(one.to_dict())  # the original's file
    windowed = RunRecord(kind="classifier", task_name="sst-2", labels=("0", "1"), max_windows=8, doc_stride=32,
                         window_pooling="mean")
    written = windowed.to_dict()
    assert (written["max_windows"], written["doc_stride"], written["window_pooling"]) == (8, 32, "mean")
    windowed.write(tmp_path)
    assert run_record.read(tmp_path) == windowed
    embedder = RunRecord(kind="embedder", task_name="sentence_embedding", max_windows=4)
    assert embedder.to_dict()["max_windows"] == 4 and "doc_stride" not in embedder.to_dict()  # None: half a window
