"""bench/step_profile.py's sorting of TensorFlow's op events into categories, on names of the kind
its profiler records for the training loop's step (the smoke run of bench/finetuning.py --profile
checks the whole path on both sides)."""

import importlib.util
import os

import pytest

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "step_profile.py")
spec = importlib.util.spec_from_file_location("step_profile", PATH)
step_profile = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step_profile)

STEP = "while/body/_1/while/StatefulPartitionedCall/"


@pytest.mark.parametrize("name, category", [
    (STEP + "bert_classifier/bert_encoder/transformer_1/attention/query/MatMul:_MklNativeFusedMatMul",
     "forward products"),
    (STEP + "bert_classifier/bert_encoder/transformer_1/attention/einsum/MatMul:BatchMatMulV2", "forward products"),
    (STEP + "bert_classifier/bert_encoder/transformer_1/dropout/Mul:Mul", "forward other"),
    (STEP + "gradient_tape/bert_classifier/bert_encoder/transformer/dense/MatMul_1:_MklMatMul", "backward products"),
    (STEP + "gradient_tape/bert_classifier/bert_encoder/transformer/layer_norm/Sum:Sum", "backward other"),
    (STEP + "UnsortedSegmentSum:UnsortedSegmentSum", "embeddings' gradient"),
    ("while/body/_1/while/clip_by_global_norm/mul_2:Mul", "gradient clipping"),
    ("while/body/_1/while/global_norm/L2Loss_1:L2Loss", "gradient clipping"),
    ("while/body/_1/while/adam_weight_decay/ResourceApplyAdam_1:ResourceApplyAdam", "optimizer update"),
    ("while/body/_1/while/adam_weight_decay/mul_5:Mul", "optimizer update"),
    ("ExecutorState::Process", None),
    ("KernelAndDeviceFunc::Run", None),
])
def test_tensorflow_ops_fall_into_their_category(name, category):
    assert step_profile.tensorflow_category(name) == category


def test_the_table_lists_every_category_its_total_and_the_wall_time():
    sides = {"a": (dict.fromkeys(step_profile.CATEGORIES, 1.0), 5.0),
             "b": (dict.fromkeys(step_profile.CATEGORIES, 2.0), 20.0)}
    lines = step_profile.table(sides)
    assert lines[0].split() == ["ms", "per", "step", "a", "b"]
    assert [line.split()[-2:] for line in lines[1:-2]] == [["1.00", "2.00"]] * len(step_profile.CATEGORIES)
    assert lines[-2].split() == ["all", "ops", "7.00", "14.00"]
    assert lines[-1].split() == ["step", "(wall)", "5.00", "20.00"]
