"""An NER run's steps without flags: reading the splits, which source of the tag set wins, the run
record, encoding, and the prediction files, on tiny files made here."""

import json
import types

import numpy as np
import pytest

from bert_tf.tasks.ner import conll
from bert_tf.tasks.ner import run as ner_run
from bert_tf.tasks.ner.conll import Sentence
from bert_tf.tasks.ner.task import NerTask
from tests.tiny import VOCAB, tiny_config, write_vocab

LABELS_FILE_TAGS = ["O", "B-PER", "I-PER"]
RUN_TAGS = ["O", "B-LOC", "I-LOC"]
OTHER_RUN_TAGS = ["O", "B-ORG", "I-ORG"]
TFDS_TAGS = ["O", "B-MISC", "I-MISC"]


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run_folder(path, tags, kind="ner"):
    """A folder as an earlier run leaves it: its fine_tuning_task.json (and a checkpoint's name)."""
    record = {"kind": kind, "task_name": kind if kind == "ner" else "cola", "labels": tags}
    _write(path / "fine_tuning_task.json", json.dumps(record))
    return str(path)


@pytest.fixture
def data_dir(tmp_path):
    _write(tmp_path / "data" / "train.txt", "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n")
    _write(tmp_path / "data" / "test.txt", "EU\nrejects\n\nPeter\n")  # words only: untagged
    return str(tmp_path / "data")


def test_a_split_is_read_from_its_file_and_a_missing_file_names_the_split(data_dir):
    train = ner_run.read_split("train", None, data_dir)
    assert [(s.words, s.tags) for s in train] == [(["EU", "rejects"], ["B-ORG", "O"]), (["Peter"], ["B-PER"])]
    test = ner_run.read_split("test", None, data_dir)
    assert [(s.words, s.tags) for s in test] == [(["EU", "rejects"], None), (["Peter"], None)]

    with pytest.raises(FileNotFoundError) as missing:
        ner_run.read_split("dev", None, data_dir)
    assert str(missing.value) == f"no dev file 'valid.txt' in data_dir={data_dir} ({data_dir}/valid.txt does not exist)"
    # A tag outside the given set: the file and line.
    with pytest.raises(ValueError, match=rf"^{data_dir}/train.txt:3: tag 'B-ORG' is not one of the labels"):
        ner_run.read_split("train", ["O", "B-PER"], data_dir)


def test_the_tag_set_comes_from_the_labels_file_else_a_run_else_tfds(tmp_path, monkeypatch):
    labels_file = _write(tmp_path / "labels.txt", "\n".join(LABELS_FILE_TAGS) + "\n")
    output_dir = _run_folder(tmp_path / "out", RUN_TAGS)
    init_run = _run_folder(tmp_path / "init", OTHER_RUN_TAGS)
    classifier_run = _run_folder(tmp_path / "cola", ["0", "1"], kind="classifier")
    empty = str(tmp_path / "empty")
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(conll, "tfds_tag_names", lambda name, data_dir: TFDS_TAGS if name == "conll2003" else None)

    def tags(**given):
        return ner_run.given_tags(**{"tfds_name": "conll2003", **given})

    assert tags(labels_file=labels_file, output_dir=output_dir, init_checkpoint=init_run) == (
        LABELS_FILE_TAGS, f"the labels file {labels_file}"
    )
    assert tags(output_dir=output_dir, init_checkpoint=init_run) == (RUN_TAGS, f"the run in {output_dir}")
    # init_checkpoint: the run's folder or one of its checkpoints.
    assert tags(output_dir=empty, init_checkpoint=init_run) == (OTHER_RUN_TAGS, f"the run in {init_run}")
    assert tags(output_dir=empty, init_checkpoint=f"{init_run}/ckpt-3") == (OTHER_RUN_TAGS, f"the run in {init_run}")
    # Another kind's run has no tags to give; a folder that does not exist yet neither.
    assert tags(output_dir=classifier_run, init_checkpoint=f"{tmp_path}/new/ckpt-1") == (
        TFDS_TAGS, "TFDS dataset conll2003"
    )
    assert ner_run.given_tags(output_dir=classifier_run, init_checkpoint=empty) is None
    assert ner_run.given_tags() is None


def test_a_bad_labels_file_or_run_record_is_named(tmp_path):
    twice = _write(tmp_path / "twice.txt", "O\nB-LOC\nO\n")
    with pytest.raises(ValueError, match=rf"^{twice}:3: tag 'O' is listed twice \(line 1\)$"):
        # Only the labels file is read when given: the output_dir's run is not looked at.
        ner_run.given_tags(labels_file=twice, output_dir=_run_folder(tmp_path / "out", RUN_TAGS))
    with pytest.raises(FileNotFoundError):
        ner_run.given_tags(labels_file=str(tmp_path / "missing.txt"))
    broken = tmp_path / "broken"
    _write(broken / "fine_tuning_task.json", "{not json")
    with pytest.raises(ValueError, match=rf"^cannot read {broken}/fine_tuning_task.json"):
        ner_run.given_tags(output_dir=str(broken))


def test_the_training_data_orders_its_tags_o_first_then_by_type_and_prefix():
    sentences = [Sentence(["a", "b", "c"], ["I-PER", "B-LOC", "O"]), Sentence(["d", "e"], ["B-PER", "S-LOC"]),
                 Sentence(["f"], None)]
    assert ner_run.training_tags(sentences) == (["O", "B-LOC", "S-LOC", "B-PER", "I-PER"], "the training data")


def test_the_record_and_what_an_earlier_run_must_share(tmp_path):
    record = ner_run.ner_record(["O", "B-LOC", "I-LOC"], False, 24, 4)
    assert record.to_dict() == {
        "kind": "ner", "task_name": "ner", "do_lower_case": False, "max_seq_length": 24, "label_kind": "token",
        "labels": ["O", "B-LOC", "I-LOC"], "window_context_words": 4,
    }
    assert ner_run.fields_to_match(True) == ("task_name", "kind", "labels", "max_seq_length", "group_by_length")
    assert ner_run.fields_to_match(False) == ("kind", "labels")


def test_a_feature_based_record_keeps_its_settings_and_rebuilds_its_model(tmp_path):
    from bert_tf.models import BertEncoder, BertFeatureTagger
    from bert_tf.runs import record as run_record

    record = ner_run.ner_record(["O", "B-LOC"], True, 24, 4, "weighted_sum_all", 8)
    record.write(tmp_path)
    written = json.loads((tmp_path / "fine_tuning_task.json").read_text())
    assert (written["feature_based"], written["lstm_units"]) == ("weighted_sum_all", 8)
    assert run_record.read(tmp_path) == record
    # What the export and the conversion build from it.
    model = record.task_kind.build_model(record, BertEncoder.from_bert_config(tiny_config()))
    assert type(model) is BertFeatureTagger
    assert (model.feature_based, model.lstm_units, model.num_classes) == ("weighted_sum_all", 8, 2)
    # lstm_units goes with feature_based only.
    assert ner_run.ner_record(["O", "B-LOC"], True, 24, 4, None, 8).lstm_units is None


def test_the_model_restored_must_have_the_settings_asked_for(tmp_path):
    fine_tuned = ner_run.ner_record(["O", "B-LOC"], True, 24, 4)
    last = ner_run.ner_record(["O", "B-LOC"], True, 24, 4, "last", 8)
    fine_tuned.write(tmp_path / "fine_tuned")
    last.write(tmp_path / "last")
    ner_run.check_model_settings(last, str(tmp_path / "last"), True)  # resuming the same model
    ner_run.check_model_settings(last, str(tmp_path / "new"), False, str(tmp_path / "last" / "ckpt-3"))
    # Initialising a training run from another model is taking its encoder.
    ner_run.check_model_settings(last, str(tmp_path / "new"), True, str(tmp_path / "fine_tuned"))
    message = rf"^feature_based=last, lstm_units=8 is not the model in {tmp_path}/fine_tuned, trained with "
    with pytest.raises(ValueError, match=message + r"feature_based=None \(fine-tuned\): give its settings$"):
        ner_run.check_model_settings(last, str(tmp_path / "fine_tuned"), True)
    wider = ner_run.ner_record(["O", "B-LOC"], True, 24, 4, "last", 16)
    with pytest.raises(ValueError, match=r"^feature_based=last, lstm_units=16 is not the model in .*/last, trained "
                                         r"with feature_based=last, lstm_units=8"):
        ner_run.check_model_settings(wider, str(tmp_path / "new"), False, str(tmp_path / "last"))
    with pytest.raises(ValueError, match=r"^feature_based=None \(fine-tuned\) is not the model in .*/last"):
        ner_run.check_model_settings(fine_tuned, str(tmp_path / "last"), False)


def test_the_task_follows_the_record_and_empty_splits_are_not_encoded(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB)
    task = ner_run.build_task(tiny_config(), ner_run.ner_record(["O", "B-LOC"], True, 8, 2), vocab)
    assert (task.labels, task.max_seq_length, task.context_words) == (["O", "B-LOC"], 8, 2)
    assert task.feature_based is None and type(task.build_model()).__name__ == "BertTokenClassifier"
    record = ner_run.ner_record(["O", "B-LOC"], True, 8, 2, "embeddings", 5)
    feature_task = ner_run.build_task(tiny_config(), record, vocab)
    assert (feature_task.feature_based, feature_task.lstm_units) == ("embeddings", 5)
    train = [Sentence(["the", "cat"], ["O", "B-LOC"])]
    features = ner_run.encode_splits(task, {"train": train, "dev": [], "test": [Sentence(["mat"])]})
    assert sorted(features) == ["test", "train"]
    # [CLS] the cat [SEP]: the words' first pieces carry their tags.
    assert features["train"]["label_ids"][0, :4].tolist() == [0, 0, 1, 0]
    assert features["train"]["label_weights"][0, :4].tolist() == [0, 1, 1, 0]


TAGGED = [Sentence(["EU", "rejects", "German"], ["B-ORG", "O", "B-MISC"]), Sentence(["Peter"], ["B-PER"])]
PREDICTED = [["B-ORG", "O", "O"], ["B-PER"]]


def test_a_tagged_test_set_gets_its_predictions_and_conlleval_figures(tmp_path):
    written = ner_run.write_test_outputs(str(tmp_path), TAGGED, PREDICTED, 7)
    assert written.predictions_file == f"{tmp_path}/test_predictions.txt"
    assert (tmp_path / "test_predictions.txt").read_text() == (
        "EU B-ORG B-ORG\nrejects O O\nGerman B-MISC O\n\nPeter B-PER B-PER\n\n"
    )
    # 3 gold entities (ORG, MISC, PER), 2 found, both right; 3 of 4 words' tags right. The
    # figures are float32 values written at double precision (not eval_results.txt's shortest form).
    lines = (tmp_path / "test_results.txt").read_text().splitlines()
    assert lines == sorted(lines)
    assert dict(line.split(" = ") for line in lines) == {
        "global_step": "7", "test_precision": "1.0", "test_recall": "0.6666666865348816",
        "test_f1": "0.800000011920929",
        "test_accuracy": "0.75", "test_gold_entities": "3", "test_predicted_entities": "2",
        "test_correct_entities": "2",
        "test_MISC_precision": "0.0", "test_MISC_recall": "0.0", "test_MISC_f1": "0.0", "test_MISC_gold": "1",
        "test_ORG_precision": "1.0", "test_ORG_recall": "1.0", "test_ORG_f1": "1.0", "test_ORG_gold": "1",
        "test_PER_precision": "1.0", "test_PER_recall": "1.0", "test_PER_f1": "1.0", "test_PER_gold": "1",
    }
    assert written.report.overall.correct == 2


def test_an_untagged_test_set_gets_predictions_and_loses_an_earlier_sets_figures(tmp_path):
    (tmp_path / "test_results.txt").write_text("test_f1 = 0.5\n")  # another test set's
    untagged = [Sentence(s.words) for s in TAGGED]
    written = ner_run.write_test_outputs(str(tmp_path), untagged, PREDICTED, 7)
    assert written.report is None
    assert (tmp_path / "test_predictions.txt").read_text() == "EU B-ORG\nrejects O\nGerman O\n\nPeter B-PER\n\n"
    assert not (tmp_path / "test_results.txt").exists()
    ner_run.write_test_outputs(str(tmp_path), untagged, PREDICTED, 7)  # nothing to remove: no error


def test_prediction_reads_first_pieces_drops_padding_rows_and_only_the_chief_writes(tmp_path):
    task = NerTask(tiny_config(), ["O", "B-ORG", "B-MISC", "B-PER"], max_seq_length=6)
    # Two windows for sentence 0 (the second repeats "rejects" as untagged context), one for 1.
    features = {
        "sentence": np.array([0, 0, 1]),
        "label_weights": np.array([[0, 1, 1, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 1, 0, 0, 0, 0]], np.float32),
    }
    predicted = np.array([[0, 1, 0, 3, 3, 3], [0, 3, 0, 3, 3, 3], [0, 3, 0, 0, 0, 0], [2, 2, 2, 2, 2, 2]])

    def trainer(chief):
        return types.SimpleNamespace(
            predict=lambda data: {"predicted": predicted}, is_chief=chief, global_step=7,
            settings=types.SimpleNamespace(output_dir=str(tmp_path)),
        )

    assert ner_run.predict(trainer(False), task, TAGGED, features) is None
    assert not (tmp_path / "test_predictions.txt").exists()
    written = ner_run.predict(trainer(True), task, TAGGED, features)
    assert (tmp_path / "test_predictions.txt").read_text() == (
        "EU B-ORG B-ORG\nrejects O O\nGerman B-MISC O\n\nPeter B-PER B-PER\n\n"
    )
    assert written.report.overall.correct == 2 and (tmp_path / "test_results.txt").exists()


def test_evaluation_writes_the_trainers_results():
    written = []
    trainer = types.SimpleNamespace(evaluate=lambda data: {"eval_f1": 0.5, "data": data},
                                    write_eval_results=written.append)
    assert ner_run.evaluate(trainer, "dev windows") == {"eval_f1": 0.5, "data": "dev windows"}
    assert written == [{"eval_f1": 0.5, "data": "dev windows"}]


def test_a_hugging_face_token_classifier_folder_gives_its_tags(tmp_path):
    from tests.hf_folder import head_shapes, write_folder
    from tests.tf1_checkpoint import original_shapes, random_weights

    config = tiny_config()
    for name, architecture in (("tagger", "BertForTokenClassification"),
                               ("sentences", "BertForSequenceClassification")):
        shapes = {**original_shapes(config, with_heads=False), **head_shapes(architecture, config)}
        write_folder(tmp_path / name, random_weights(shapes), config, architecture,
                     id2label={"0": "O", "1": "B-PER", "2": "I-PER"})
    tagger = str(tmp_path / "tagger")
    assert ner_run.given_tags(init_checkpoint=tagger) == (["O", "B-PER", "I-PER"], f"the run in {tagger}")
    assert ner_run.given_tags(init_checkpoint=str(tmp_path / "sentences")) is None  # a sentence classifier's labels
