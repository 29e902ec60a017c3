"""The SQuAD TFRecord writer: the original FeatureWriter's records (restated in
tests/original_squad.py), read back by the spec and the pipeline of bert_tf.tasks.squad.inputs;
no partial file."""

import os
import random

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tasks.squad import features as squad
from bert_tf.tasks.squad import inputs
from bert_tf.tasks.squad.feature_writer import write_features
from bert_tf.tokenization import FullTokenizer
from tests.original_squad import original_record
from tests.tasks.squad.test_features import VOCAB, dump, make_squad


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return FullTokenizer(str(path), do_lower_case=True)


def _features(tmp_path, tokenizer, is_training, seed=3, paragraphs=6):
    path = dump(tmp_path, make_squad(random.Random(seed), paragraphs, True))
    examples = squad.read_squad_examples(path, is_training, True)
    return list(squad.convert_examples_to_features(examples, tokenizer, 24, 5, 6, is_training))


@pytest.mark.parametrize("is_training", [True, False])
def test_write_features_in_the_original_format(tmp_path, tokenizer, is_training):
    features = _features(tmp_path, tokenizer, is_training)
    features[0].input_ids[-1] = 2**40  # any int64 survives, negative ones too
    features[1].input_ids[-1] = -3
    out = str(tmp_path / "out" / "train.tf_record")
    assert write_features(iter(features), out, is_training) == len(features)
    records = list(tf.data.TFRecordDataset(out).as_numpy_iterator())
    assert len(records) == len(features)
    # The spec the pipeline parses the records with: the original input_fn's names and shapes.
    names = {"unique_ids": [], "input_ids": [24], "input_mask": [24], "segment_ids": [24]}
    if is_training:
        names.update(start_positions=[], end_positions=[], is_impossible=[])
    spec = {name: tf.io.FixedLenFeature(shape, tf.int64) for name, shape in names.items()}
    assert inputs.feature_spec(24, is_training) == spec
    for record, feature in zip(records, features, strict=True):
        assert tf.train.Example.FromString(record) == original_record(feature, is_training)
        parsed = tf.io.parse_single_example(record, inputs.feature_spec(24, is_training))
        assert parsed["unique_ids"].numpy() == feature.unique_id
        assert parsed["input_ids"].numpy().tolist() == feature.input_ids
    assert sorted(os.listdir(tmp_path / "out")) == ["train.tf_record"]


@pytest.mark.parametrize("is_training", [True, False])
def test_the_pipeline_reads_what_the_writer_wrote(tmp_path, tokenizer, is_training):
    features = _features(tmp_path, tokenizer, is_training, seed=5)
    path = str(tmp_path / "eval.tf_record")
    records = inputs.SquadRecords(path, write_features(features, path, is_training), 24, is_training)
    inputs.check_records(records)
    x, y = next(iter(inputs.squad_dataset(records, "eval", batch_size=len(features) + 3)))
    np.testing.assert_array_equal(x["input_word_ids"][: len(features)], [f.input_ids for f in features])
    np.testing.assert_array_equal(x["input_mask"][: len(features)], [f.input_mask for f in features])
    np.testing.assert_array_equal(x["input_type_ids"][: len(features)], [f.segment_ids for f in features])
    assert y["weight"].numpy().tolist() == [1.0] * len(features) + [0.0] * 3  # padded to the batch
    if is_training:
        assert y["start_positions"].numpy().tolist()[: len(features)] == [f.start_position for f in features]
        assert y["end_positions"].numpy().tolist()[: len(features)] == [f.end_position for f in features]
    else:
        assert "start_positions" not in y


def test_write_features_leaves_no_partial_file(tmp_path, tokenizer):
    features = _features(tmp_path, tokenizer, False, seed=4, paragraphs=3)
    out = tmp_path / "eval.tf_record"

    def failing():
        yield from features[:3]
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        write_features(failing(), str(out), False)
    assert not out.exists()
    out.write_bytes(b"previous")
    with pytest.raises(RuntimeError, match="interrupted"):
        write_features(failing(), str(out), False)
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.tf_record", "squad.json"]
