"""A SWAG run's steps without flags: reading the CSV splits, the run record, the task, evaluation
and the prediction files, on tiny files made here."""

import types

import numpy as np
import pytest

from bert_tf.tasks.swag import run as swag_run
from tests.tiny import VOCAB, tiny_config, write_vocab

HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3"
ROWS = [
    "7,anetv_1,1000,The cat sat. It,The cat sat.,It,gold,runs.,sits.,is big.,is red.",
    "14,anetv_2,1001,A dog ran. He,A dog ran.,He,gold,a,b,c,d",
]


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "swag").mkdir()
    (tmp_path / "swag" / "train.csv").write_text(f"{HEADER},label\n{ROWS[0]},2\n{ROWS[1]},0\n", encoding="utf-8")
    (tmp_path / "swag" / "test.csv").write_text(f"{HEADER}\n{ROWS[0]}\n{ROWS[1]}\n", encoding="utf-8")
    return str(tmp_path / "swag")


def test_a_split_is_read_from_its_csv_file_and_a_missing_file_names_the_split(tmp_path, data_dir):
    train = swag_run.read_split(data_dir, "train")
    assert [(e.guid, e.context, e.start, e.endings, e.label) for e in train] == [
        ("train-7", "The cat sat.", "It", ["runs.", "sits.", "is big.", "is red."], 2),
        ("train-14", "A dog ran.", "He", ["a", "b", "c", "d"], 0),
    ]
    test = swag_run.read_split(data_dir, "test")  # no label column
    assert [(e.index, e.label) for e in test] == [("7", None), ("14", None)]

    with pytest.raises(FileNotFoundError) as missing:
        swag_run.read_split(data_dir, "dev")
    assert str(missing.value) == f"no dev file 'val.csv' in data_dir={data_dir} ({data_dir}/val.csv does not exist)"
    # A training file must carry labels: the file and the header's line.
    unlabelled = tmp_path / "unlabelled"
    unlabelled.mkdir()
    (unlabelled / "train.csv").write_text(f"{HEADER}\n{ROWS[0]}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{unlabelled}/train.csv:1: no column 'label' in the header"):
        swag_run.read_split(str(unlabelled), "train")


def test_the_record_the_task_and_what_an_earlier_run_must_share(tmp_path):
    record = swag_run.swag_record(False, 16)
    assert record.to_dict() == {
        "kind": "swag", "task_name": "swag", "do_lower_case": False, "max_seq_length": 16, "num_choices": 4,
    }
    assert swag_run.fields_to_match(True) == ("task_name", "kind", "num_choices", "max_seq_length", "group_by_length")
    assert swag_run.fields_to_match(False) == ("kind", "num_choices")
    task = swag_run.build_task(tiny_config(), record, write_vocab(tmp_path / "vocab.txt", VOCAB))
    assert (task.num_choices, task.max_seq_length, task.labels) == (4, 16, ["0", "1", "2", "3"])


# Probabilities of the two test examples' endings, then a padding row.
PROBABILITIES = np.array([[0.125, 0.5, 0.25, 0.125], [0.75, 0.0625, 0.0625, 0.125], [1, 0, 0, 0]], np.float32)


def test_the_prediction_files_hold_each_examples_probabilities_and_choice(tmp_path, data_dir):
    test = swag_run.read_split(data_dir, "test")

    def trainer(chief):
        return types.SimpleNamespace(
            predict=lambda data: {"probabilities": PROBABILITIES}, is_chief=chief,
            settings=types.SimpleNamespace(output_dir=str(tmp_path)),
        )

    task = types.SimpleNamespace(labels=["0", "1", "2", "3"])
    assert swag_run.predict(trainer(False), task, test) is None
    assert not (tmp_path / "test_results.tsv").exists() and not (tmp_path / "test_predictions.tsv").exists()
    written = swag_run.predict(trainer(True), task, test)
    assert written == swag_run.PredictionFiles(f"{tmp_path}/test_results.tsv", f"{tmp_path}/test_predictions.tsv")
    assert (tmp_path / "test_results.tsv").read_text() == "0.125\t0.5\t0.25\t0.125\n0.75\t0.0625\t0.0625\t0.125\n"
    assert (tmp_path / "test_predictions.tsv").read_text() == "index\tprediction\n7\t1\n14\t0\n"


def test_evaluation_reads_the_encoded_examples_and_writes_the_trainers_results(data_dir):
    seen, written = [], []

    def evaluate(data):
        seen.append(data)
        return {"eval_accuracy": 0.5}

    trainer = types.SimpleNamespace(evaluate=evaluate, write_eval_results=written.append)
    assert swag_run.evaluate(trainer, swag_run.read_split(data_dir, "train")) == {"eval_accuracy": 0.5}
    assert written == [{"eval_accuracy": 0.5}]
    assert seen[0]["context"].tolist() == ["The cat sat.", "A dog ran."]
    assert seen[0]["choices"][1].tolist() == ["He a", "He b", "He c", "He d"]
    assert seen[0]["label"].tolist() == [2, 0]
