"""bench/step_profile.py: TensorFlow's op events sorted into categories, on names of the kind its
profiler records for the training loop's step; a profile's window (the executions after the first)
and its division by their steps, on a synthetic XSpace; torch's events under their phases; the
table. The smoke runs of the benches' --profile check the whole path on both sides."""

import collections
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
    (STEP + "AddN_38/inputs_1:UnsortedSegmentSum", "embeddings' gradient"),  # the tied output layer's sum
    (STEP + "gradient_tape/bert_pretrainer/transformer_layer_3/UnsortedSegmentSum:UnsortedSegmentSum",
     "backward other"),  # the gradient of rows a layer gathers
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
    sides = {"a": {"categories": dict.fromkeys(step_profile.CATEGORIES, 1.0), "wall": 5.0, "profiled": 6.0},
             "b": {"categories": dict.fromkeys(step_profile.CATEGORIES, 2.0), "wall": 20.0, "profiled": 25.0}}
    lines = step_profile.table(sides)
    assert lines[0].split() == ["ms", "per", "step", "a", "b"]
    assert [line.split()[-2:] for line in lines[1:-3]] == [["1.00", "2.00"]] * len(step_profile.CATEGORIES)
    assert lines[-3].split() == ["all", "ops", "7.00", "14.00"]
    assert lines[-2].split() == ["step", "(wall)", "5.00", "20.00"]
    assert lines[-1].split() == ["step", "(profiled)", "6.00", "25.00"]


def _xspace(executions, ops):
    """A serialized XSpace as TensorFlow's profiler writes one: `executions` [(start, duration)] of
    the train function on the "python" line, `ops` [(line, start, duration, name)] on others (ps)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(name="/host:CPU")
    ids = {}

    def event(line, start, duration, name):
        if name not in ids:
            ids[name] = len(ids) + 1
            plane.event_metadata[ids[name]].id = ids[name]
            plane.event_metadata[ids[name]].name = name
        line.events.add(metadata_id=ids[name], offset_ps=int(start), duration_ps=int(duration))

    python = plane.lines.add(name="python", timestamp_ns=0)
    for start, duration in executions:
        event(python, start, duration, "EagerLocalExecute: __inference_train_123")
    lines = {}
    for line, start, duration, name in ops:
        if line not in lines:
            lines[line] = plane.lines.add(name=line, timestamp_ns=0)
        event(lines[line], start, duration, name)
    return space.SerializeToString()


MS = 10**9  # picoseconds


def test_tensorflow_profile_reads_the_executions_after_the_first_and_divides_by_their_steps():
    # Three executions: 10 steps (traced, left out), 10 steps, then a last one of 5.
    executions = [(0, 100 * MS), (200 * MS, 40 * MS), (300 * MS, 20 * MS)]
    product = STEP + "bert_classifier/dense/MatMul:_MklMatMul"
    ops = [
        ("tf_Compute/1", 10 * MS, 90 * MS, product),  # in the first execution: not counted
        ("tf_Compute/1", 210 * MS, 30 * MS, product),
        ("tf_Compute/2", 215 * MS, 15 * MS, STEP + "gradient_tape/bert_classifier/dense/MatMul:_MklMatMul"),
        ("tf_Compute/1", 305 * MS, 6 * MS, "while/body/_1/while/adam_weight_decay/ResourceApplyAdam:ResourceApplyAdam"),
        ("tf_Compute/1", 310 * MS, 3 * MS, STEP + "gradient_tape/bert_classifier/layer/UnsortedSegmentSum:"
                                                 "UnsortedSegmentSum"),
        ("tf_Compute/2", 312 * MS, 1.5 * MS, STEP + "UnsortedSegmentSum:UnsortedSegmentSum"),
        ("tf_Compute/1", 301 * MS, 9 * MS, "ExecutorState::Process"),  # the executor's own: not an op
        ("tf_data_iterator/1", 305 * MS, 50 * MS, "ParallelMapDatasetV2:ParallelMapDatasetV2"),  # input
        ("tf_Compute/1", 400 * MS, 7 * MS, product),  # after the last execution
    ]
    by_op = collections.Counter()
    categories, wall = step_profile.tensorflow_profile(_xspace(executions, ops), steps=15, by_op=by_op)
    expected = dict.fromkeys(step_profile.CATEGORIES, 0.0)
    expected.update({"forward products": 30 / 15, "backward products": 15 / 15, "optimizer update": 6 / 15,
                     "backward other": 3 / 15, "embeddings' gradient": 1.5 / 15})
    assert categories == pytest.approx(expected)
    assert wall == pytest.approx(60 / 15)
    assert by_op == pytest.approx({("forward products", "_MklMatMul"): 2, ("backward products", "_MklMatMul"): 1,
                                   ("optimizer update", "ResourceApplyAdam"): 0.4,
                                   ("backward other", "UnsortedSegmentSum"): 0.2,
                                   ("embeddings' gradient", "UnsortedSegmentSum"): 0.1})


def test_tensorflow_profile_needs_an_execution_after_the_traced_one():
    with pytest.raises(ValueError, match="1 executions of __inference_train: at least 2"):
        step_profile.tensorflow_profile(_xspace([(0, MS)], []), steps=1)


class _Event:
    """What torch_profile reads of a torch.profiler event."""

    def __init__(self, name, self_ms, parent=None):
        self.name, self.self_cpu_time_total, self.cpu_parent = name, self_ms * 1000, parent


def test_torch_profile_files_each_op_under_its_phase():
    forward, backward = _Event("forward", 1), _Event("backward", 1)
    clip, update = _Event("clipping", 1), _Event("optimizer", 1)
    linear = _Event("aten::linear", 0.5, forward)
    embedding, mm = _Event("EmbeddingBackward0", 0.25, backward), _Event("MmBackward0", 0.5, backward)
    events = [
        forward, backward, clip, update, linear, mm,
        _Event("aten::addmm", 8, linear), _Event("aten::gelu", 2, forward),
        _Event("aten::mm", 12, mm), _Event("aten::mul", 3, backward),
        embedding, _Event("aten::embedding_dense_backward", 1, embedding),
        _Event("aten::linalg_vector_norm", 4, clip), _Event("aten::_foreach_mul_", 6, update),
        _Event("aten::copy_", 9),  # outside every phase (the batch's collation): not counted
    ]
    by_op = collections.Counter()
    found = step_profile.torch_profile(events, steps=2, by_op=by_op)
    assert found == pytest.approx({
        "forward products": 8 / 2, "forward other": (0.5 + 2) / 2, "backward products": 12 / 2,
        "backward other": (0.5 + 3) / 2, "embeddings' gradient": (0.25 + 1) / 2, "gradient clipping": 4 / 2,
        "optimizer update": 6 / 2,
    })
    # The other ops of both passes, the largest first, each op's two passes summed.
    assert step_profile.largest(by_op) == [("aten::mul", 1.5), ("aten::gelu", 1.0), ("aten::linear", 0.25),
                                           ("MmBackward0", 0.25)]
    assert step_profile.largest_lines({"pytorch": step_profile.largest(by_op, count=2)}) == [
        "  pytorch's other ops, the largest (ms per step): aten::mul 1.50, aten::gelu 1.00"]
