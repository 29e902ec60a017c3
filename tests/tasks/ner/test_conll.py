"""CoNLL-2003 files and TFDS's conll2003 read as sentences; bad lines named by file and line."""

import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from bert_tf.tasks.ner.conll import (
    Sentence,
    label_list,
    read_conll,
    read_labels_file,
    read_tfds_sentences,
    tfds_tag_names,
    write_predictions,
)

# The shared task's English layout (IOB1): word, part of speech, chunk, entity; -DOCSTART- lines.
ENGLISH = """-DOCSTART- -X- -X- O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP I-NP I-LOC
1996-08-22 CD I-NP O
"""


def _write(tmp_path, text, name="train.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _raises(*fragments):
    return pytest.raises(ValueError, match="(?s)" + ".*".join(re.escape(f) for f in fragments))


def test_reads_the_shared_tasks_layout(tmp_path):
    path = _write(tmp_path, ENGLISH)
    sentences = read_conll(path)
    assert [s.words for s in sentences] == [
        ["EU", "rejects", "German", "call", "."], ["Peter", "Blackburn"], ["BRUSSELS", "1996-08-22"],
    ]
    assert [s.tags for s in sentences] == [
        ["I-ORG", "O", "I-MISC", "O", "O"], ["I-PER", "I-PER"], ["I-LOC", "O"],
    ]
    assert [s.where for s in sentences] == [f"{path}:3", f"{path}:9", f"{path}:14"]
    assert label_list(sentences) == ["O", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def test_two_columns_iob2_iobes_blank_runs_and_an_untagged_test_file(tmp_path):
    text = "\n\n\tJohn\tB-PER\nSmith  I-PER\nsaw O\n\n\n\nRome S-LOC\nhills E-LOC\n"
    sentences = read_conll(_write(tmp_path, text))
    assert [(s.words, s.tags) for s in sentences] == [
        (["John", "Smith", "saw"], ["B-PER", "I-PER", "O"]), (["Rome", "hills"], ["S-LOC", "E-LOC"]),
    ]
    assert label_list(sentences) == ["O", "E-LOC", "S-LOC", "B-PER", "I-PER"]
    untagged = read_conll(_write(tmp_path, "John\nsaw\n\nRome\n", "test.txt"), tagged=False)
    assert [(s.words, s.tags) for s in untagged] == [(["John", "saw"], None), (["Rome"], None)]


def test_bad_files_name_the_file_and_line(tmp_path):
    missing_tag = _write(tmp_path, "EU NNP I-NP B-ORG\nrejects VBZ I-VP\n")
    with _raises(f"{missing_tag}:2: 3 column(s), but line 1 has 4", "a missing tag?"):
        read_conll(missing_tag)
    word_only = _write(tmp_path, "-DOCSTART- -X- -X- O\n\nEU\nrejects\n")
    with _raises(f"{word_only}:3: a word without a tag ('EU')"):
        read_conll(word_only)
    malformed = _write(tmp_path, "EU B-ORG\n\nPeter PER\n")
    with _raises(f"{malformed}:3: tag 'PER' is not O or B-/I-/E-/S- followed by a type"):
        read_conll(malformed)
    outside = _write(tmp_path, "EU B-ORG\nrejects O\n\nPeter B-PER\n")
    with _raises(f"{outside}:4: tag 'B-PER' is not one of the labels ['O', 'B-ORG', 'I-ORG']"):
        read_conll(outside, labels=["O", "B-ORG", "I-ORG"])
    for text in ("", "\n\n", "-DOCSTART- -X- -X- O\n\n"):
        empty = _write(tmp_path, text)
        with _raises(f"{empty}: no sentences"):
            read_conll(empty)
    with pytest.raises(FileNotFoundError, match="nowhere.txt: no such file"):
        read_conll(str(tmp_path / "nowhere.txt"))
    bad_utf8 = tmp_path / "latin1.txt"
    bad_utf8.write_bytes("EU B-ORG\n\nK\u00f6ln B-LOC\n".encode("latin-1"))
    with _raises(f"{bad_utf8}:3: not valid UTF-8"):
        read_conll(str(bad_utf8))


def test_predictions_are_conllevals_input_and_read_back(tmp_path):
    sentences = [Sentence(["EU", "rejects"], ["B-ORG", "O"]), Sentence(["Peter"], ["B-PER"])]
    path = str(tmp_path / "predictions.txt")
    write_predictions(path, sentences, [["B-ORG", "B-MISC"], ["O"]])
    assert open(path).read() == "EU B-ORG B-ORG\nrejects O B-MISC\n\nPeter B-PER O\n\n"
    assert [(s.words, s.tags) for s in read_conll(path)] == [
        (["EU", "rejects"], ["B-ORG", "B-MISC"]), (["Peter"], ["O"]),
    ]
    write_predictions(path, [Sentence(["Peter", "Pan"])], [["B-PER", "I-PER"]])
    assert open(path).read() == "Peter B-PER\nPan I-PER\n\n"


def test_labels_file(tmp_path):
    assert read_labels_file(_write(tmp_path, "O\nB-PER\n\nI-PER\n", "labels.txt")) == ["O", "B-PER", "I-PER"]
    with _raises("labels.txt:3: tag 'O' is listed twice (line 1)"):
        read_labels_file(_write(tmp_path, "O\nB-PER\nO\n", "labels.txt"))
    with _raises("labels.txt:2: tag 'PER' is not O or B-/I-/E-/S-"):
        read_labels_file(_write(tmp_path, "O\nPER\n", "labels.txt"))
    with _raises("labels.txt: no labels"):
        read_labels_file(_write(tmp_path, "\n", "labels.txt"))


def _fake_rows(rows):
    """An as_dataset_fn for mock_data yielding the given decoded rows."""

    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_generator(
            lambda: iter(rows),
            output_signature={"tokens": tf.TensorSpec([None], tf.string), "ner": tf.TensorSpec([None], tf.int64)},
        )

    return as_dataset


def test_tfds_conll2003():
    names = tfds_tag_names()
    assert names == ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    rows = [
        {"tokens": np.array([b"EU", b"rejects", b"K\xc3\xb6ln"], object), "ner": np.array([3, 0, 5])},
        {"tokens": np.array([b"Peter", b"Blackburn"], object), "ner": np.array([1, 2])},
    ]
    with tfds.testing.mock_data(as_dataset_fn=_fake_rows(rows)):
        sentences = read_tfds_sentences("dev")
        assert [(s.words, s.tags) for s in sentences] == [
            (["EU", "rejects", "Köln"], ["B-ORG", "O", "B-LOC"]), (["Peter", "Blackburn"], ["B-PER", "I-PER"]),
        ]
        assert sentences[1].where == "TFDS dataset conll2003, split dev, example 1"
        with _raises("split train, example 1: tag 'B-PER' is not one of the labels ['O', 'B-ORG', 'B-LOC']"):
            read_tfds_sentences("train", labels=["O", "B-ORG", "B-LOC"])
    # TFDS's own random mock: words and tags of different lengths, named.
    named = _raises("TFDS dataset conll2003, split train, example 0:", "words but")
    with tfds.testing.mock_data(num_examples=2), named:
        read_tfds_sentences("train")
    with _raises("unknown split 'validation'"):
        read_tfds_sentences("validation")
