import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from bert_tf.tasks.classifier.catalog import create_processor
from bert_tf.tasks.classifier.tfds import read_tfds_examples

N = 4


def _direct(name, split):
    """The mocked dataset as tfds itself gives it (mock_data is deterministic)."""
    return list(tfds.as_numpy(tfds.load(name, split=split, shuffle_files=False)))


def _raises(exc, *fragments):
    return pytest.raises(exc, match="(?s)" + ".*".join(re.escape(f) for f in fragments))


def test_sst2_labels_texts_and_index():
    sst2 = create_processor("sst-2")
    with tfds.testing.mock_data(num_examples=N):
        for split, tfds_split in [("train", "train"), ("dev", "validation"), ("test", "test")]:
            examples = read_tfds_examples(sst2, split)
            rows = _direct("glue/sst2", tfds_split)
            assert len(examples) == N
            for example, row in zip(examples, rows, strict=True):
                assert example.text_a == row["sentence"].decode("utf-8")
                assert example.text_b is None
                assert example.label == str(row["label"])  # ClassLabel id i is the TSV's "i"
                assert example.label in sst2.get_labels()
                assert example.index == str(row["idx"])
                assert example.guid == f"{split}-{row['idx']}"


def test_mnli_matched_and_mismatched_splits():
    mnli = create_processor("mnli")
    names = ["entailment", "neutral", "contradiction"]  # TFDS's ClassLabel order
    with tfds.testing.mock_data(num_examples=N):
        for split, tfds_split in [
            ("train", "train"),
            ("dev", "validation_matched"),
            (("dev", "mismatched"), "validation_mismatched"),
            (("test", "mismatched"), "test_mismatched"),
        ]:
            examples = read_tfds_examples(mnli, split)
            rows = _direct("glue/mnli", tfds_split)
            assert len(examples) == N
            for example, row in zip(examples, rows, strict=True):
                assert (example.text_a, example.text_b) == (
                    row["premise"].decode("utf-8"),
                    row["hypothesis"].decode("utf-8"),
                )
                assert example.label == names[row["label"]]
                assert example.label in mnli.get_labels()
        mismatched = read_tfds_examples(mnli, ("dev", "mismatched"))
        assert mismatched[0].guid.startswith("dev_mismatched-")
        mm = read_tfds_examples(create_processor("mnli-mm"), "dev")  # mnli-mm's dev set
        assert [e.text_a for e in mm] == [e.text_a for e in mismatched]


def test_stsb_labels_are_float_strings():
    stsb = create_processor("sts-b")
    with tfds.testing.mock_data(num_examples=N):
        examples = read_tfds_examples(stsb, "dev")
        rows = _direct("glue/stsb", "validation")
    assert len(examples) == N
    for example, row in zip(examples, rows, strict=True):
        assert example.label == str(row["label"])
        assert float(example.label) == pytest.approx(float(row["label"]))
        assert example.text_b == row["sentence2"].decode("utf-8")


def _fake_rows(rows):
    """An as_dataset_fn for mock_data yielding the given decoded rows."""

    def as_dataset(self, *args, **kwargs):
        signature = tf.nest.map_structure(
            lambda v: tf.TensorSpec(np.shape(v), tf.as_dtype(np.asarray(v).dtype)), rows[0]
        )
        return tf.data.Dataset.from_generator(lambda: iter(rows), output_signature=signature)

    return as_dataset


def test_unlabelled_test_rows_get_label_none():
    rows = [
        {"sentence": b"Quiet.", "label": np.int64(-1), "idx": np.int32(0)},
        {"sentence": b"Loud.", "label": np.int64(-1), "idx": np.int32(1)},
    ]
    with tfds.testing.mock_data(as_dataset_fn=_fake_rows(rows)):
        examples = read_tfds_examples(create_processor("sst-2"), "test")
    assert [(e.text_a, e.label, e.index) for e in examples] == [
        ("Quiet.", None, "0"),
        ("Loud.", None, "1"),
    ]


def _xnli_row(label, premise, hypotheses):
    languages = tfds.builder("xnli").info.features["premise"].languages
    return {
        "premise": {lang: premise.get(lang, f"[{lang}]").encode() for lang in languages},
        "hypothesis": {
            "language": np.array([lang.encode() for lang in hypotheses], dtype=object),
            "translation": np.array([t.encode() for t in hypotheses.values()], dtype=object),
        },
        "label": np.int64(label),
    }


def test_xnli_picks_the_language():
    rows = [
        _xnli_row(
            2, {"de": "Es regnet.", "zh": "下雨了。"}, {"de": "Es ist trocken.", "zh": "很干。"}
        ),
        _xnli_row(
            0, {"de": "Sie singt.", "zh": "她在唱歌。"}, {"zh": "她出声了。", "de": "Sie tönt."}
        ),
    ]
    with tfds.testing.mock_data(as_dataset_fn=_fake_rows(rows)):
        de = read_tfds_examples(create_processor("xnli", xnli_language="de"), "dev")
        zh = read_tfds_examples(create_processor("xnli"), "test")
        with _raises(ValueError, "xnli", "'hypothesis'", "'fr'", "['de', 'zh']"):
            read_tfds_examples(create_processor("xnli", xnli_language="fr"), "dev")
    assert [(e.text_a, e.text_b, e.label, e.index) for e in de] == [
        ("Es regnet.", "Es ist trocken.", "contradiction", None),
        ("Sie singt.", "Sie tönt.", "entailment", None),
    ]
    assert [(e.text_a, e.text_b) for e in zh] == [
        ("下雨了。", "很干。"),
        ("她在唱歌。", "她出声了。"),
    ]


def test_xnli_has_no_train_split():
    with _raises(ValueError, "xnli", "no train split", "MultiNLI", "--data_dir"):
        read_tfds_examples(create_processor("xnli"), "train")


def test_binary_glue_classlabels_are_in_the_tsv_order():
    # Id 1 is each task's positive class, as label "1" is in the GLUE TSV files.
    for name, positive in [
        ("cola", "acceptable"),
        ("sst2", "positive"),
        ("mrpc", "equivalent"),
        ("qqp", "duplicate"),
        ("wnli", "entailment"),
    ]:
        assert tfds.builder(f"glue/{name}").info.features["label"].names[1] == positive


def test_bad_split_missing_dataset_and_unprepared_data_dir(tmp_path):
    mrpc = create_processor("mrpc")
    with _raises(ValueError, "unknown split 'validation'"):
        read_tfds_examples(mrpc, "validation")
    with _raises(ValueError, "no extra dev set 'mismatched'"):
        read_tfds_examples(mrpc, ("dev", "mismatched"))
    with _raises(ValueError, "glue/nope", "split validation", "no such TFDS dataset"):
        read_tfds_examples(mrpc, "dev", tfds_name="glue/nope", data_dir=str(tmp_path))
    with _raises(FileNotFoundError, "glue/mrpc", "split test", str(tmp_path), "tfds build"):
        read_tfds_examples(mrpc, "test", data_dir=str(tmp_path))
    with _raises(ValueError, "multilabel", "no TFDS source"):
        labels = tmp_path / "labels.txt"
        labels.write_text("a\n")
        read_tfds_examples(create_processor("multilabel", labels_file=str(labels)), "dev")
