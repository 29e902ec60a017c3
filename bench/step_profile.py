"""Where a training step's time goes, by the same categories on both sides of a bench: our step from
TensorFlow's profiler, the PyTorch peer's from torch's. Imported by bench/finetuning.py and
bench/pretraining.py (`--profile`) and by the peer's process (bench/peer_process.py); it imports
TensorFlow only inside `tensorflow_side` and `tensorflow_profile`, and never torch.

The categories (CATEGORIES): the forward pass's matrix products and its other ops, the same for the
backward pass, the embeddings' gradient made dense for the update (TensorFlow: the
UnsortedSegmentSum that turns the sparse gradient of the embedding lookup into a dense one, outside
the tape's own ops; torch: embedding_dense_backward), the gradients' global-norm clip, and the
optimizer's update. The tape's other UnsortedSegmentSums (the gradients of the rows a layer gathers:
the padding skip's, the last layer's masked positions) are backward ops like any other. A product is
a MatMul / BatchMatMul op of any kernel (oneDNN's, Eigen's, fused with its bias) or torch's mm /
addmm / bmm / baddbmm.

Each figure is the ops' own time per step in milliseconds, under the profiler: an op's time without
the ops it calls. TensorFlow runs independent ops at once on its inter-op threads (each op on its
intra-op threads), so its op times can add up to more than its step's wall time, and an op that
waits for a core beside another counts its wait too; torch runs one op at a time on the calling
thread (backward too, for CPU tensors). The profilers cost time of their own, so the benches time
each side's step without them as well.
"""

import collections
import glob
import os

CATEGORIES = ("forward products", "forward other", "backward products", "backward other", "embeddings' gradient",
              "gradient clipping", "optimizer update")
# The peer's step marks its phases with these torch.profiler.record_function names.
TORCH_PHASES = {"forward": "forward", "backward": "backward", "clipping": "gradient clipping",
                "optimizer": "optimizer update"}
TORCH_PRODUCTS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
TORCH_EMBEDDING_GRADIENT = {"aten::embedding_dense_backward", "EmbeddingBackward0"}


def tensorflow_category(name):
    """The category of one op event of TensorFlow's profiler ("scope/name:Type"), or None for an
    event that is not an op (the executor's own)."""
    if ":" not in name or "::" in name:
        return None
    scope, kind = name.rsplit(":", 1)
    if kind == "UnsortedSegmentSum" and "gradient_tape" not in scope:  # a sparse gradient made dense
        return "embeddings' gradient"
    if "adam_weight_decay" in scope or kind.startswith("ResourceApply") or kind == "AssignSubVariableOp":
        return "optimizer update"
    if "global_norm" in scope or "clip_by" in scope:
        return "gradient clipping"
    phase = "backward" if "gradient_tape" in scope else "forward"
    return f"{phase} {'products' if 'MatMul' in kind or kind == 'Einsum' else 'other'}"


def tensorflow_profile(xspace_bytes, steps, function_prefix="__inference_train", by_op=None):
    """`(categories, wall)` per step, in ms, from a serialized XSpace of TensorFlow's profiler that
    holds several executions of the function named `function_prefix...`: the executions after the
    first (which traces), which ran `steps` steps in all, are read. `by_op`, a Counter where given,
    gets the same time by (category, op type)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # TensorFlow's own profile format

    space = xplane_pb2.XSpace()
    space.ParseFromString(xspace_bytes)
    executions, ops = [], []
    for plane in space.planes:
        names = plane.event_metadata
        for line in plane.lines:
            start = line.timestamp_ns * 1000
            for event in line.events:
                name = names[event.metadata_id].name
                at = (start + event.offset_ps, event.duration_ps)
                if name.startswith(f"EagerLocalExecute: {function_prefix}"):
                    executions.append(at)
                elif line.name.startswith("tf_Compute"):
                    ops.append((*at, name))
    executions.sort()
    if len(executions) < 2:
        raise ValueError(f"the profile holds {len(executions)} executions of {function_prefix}: at least 2 needed")
    first, last = executions[1][0], executions[-1][0] + executions[-1][1]
    categories = collections.Counter({c: 0.0 for c in CATEGORIES})
    for at, duration, name in ops:
        category = tensorflow_category(name)
        if category and first <= at <= last:
            categories[category] += duration / 1e9 / steps
            if by_op is not None:
                by_op[category, name.rsplit(":", 1)[1]] += duration / 1e9 / steps
    wall = sum(duration for _, duration in executions[1:]) / 1e9 / steps
    return dict(categories), wall


def tensorflow_side(run, steps, directory):
    """Our side's profile, in the shape the peer's process returns its own (`peer_process.profiled`):
    {"categories", "wall", "profiled", "largest"}. `run()` trains and returns its ms per step: it is
    called once without TensorFlow's profiler ("wall"), then under it (its trace written under
    `directory`), read by `tensorflow_profile` over `steps`, the steps after its first execution."""
    import tensorflow as tf

    wall = run()
    tf.profiler.experimental.start(directory)
    try:
        run()
    finally:
        tf.profiler.experimental.stop()
    (path,) = glob.glob(os.path.join(directory, "**", "*.xplane.pb"), recursive=True)
    by_op = collections.Counter()
    with open(path, "rb") as f:
        categories, profiled = tensorflow_profile(f.read(), steps, by_op=by_op)
    return {"categories": categories, "wall": wall, "profiled": profiled, "largest": largest(by_op)}


def torch_profile(events, steps, by_op=None):
    """`categories` per step, in ms, from torch.profiler's `profile.events()` over `steps` steps of a
    step marked with TORCH_PHASES. `by_op`, a Counter where given, gets the same time by (category,
    op name)."""
    categories = collections.Counter({c: 0.0 for c in CATEGORIES})
    for event in events:
        phase, parent = None, event.cpu_parent
        embedding = event.name in TORCH_EMBEDDING_GRADIENT
        while parent is not None:
            embedding = embedding or parent.name in TORCH_EMBEDDING_GRADIENT
            phase = TORCH_PHASES.get(parent.name, phase)
            parent = parent.cpu_parent
        if phase is None or event.name in TORCH_PHASES:
            continue
        if phase in ("forward", "backward"):
            phase = ("embeddings' gradient" if embedding and phase == "backward"
                     else f"{phase} {'products' if event.name in TORCH_PRODUCTS else 'other'}")
        categories[phase] += event.self_cpu_time_total / 1000 / steps
        if by_op is not None:
            by_op[phase, event.name] += event.self_cpu_time_total / 1000 / steps
    return dict(categories)


OTHER = ("forward other", "backward other")


def largest(by_op, categories=OTHER, count=6):
    """[(op, ms per step)]: the `count` ops of `by_op` ((category, op) -> ms) that take the most time
    in `categories` (default: the other ops of both passes, each op's two passes summed)."""
    total = collections.Counter()
    for (category, op), ms in by_op.items():
        if category in categories:
            total[op] += ms
    return [(op, round(ms, 2)) for op, ms in total.most_common(count)]


def table(sides):
    """Lines of a table of `sides` ({side: its profile, `tensorflow_side`'s shape}, ms per step): a
    row per category and their total, a column per side, then each side's wall time per step
    without the profiler and under it."""
    found = [side["categories"] for side in sides.values()]
    lines = [f"  {'ms per step':24s}" + "".join(f"{name:>12s}" for name in sides)]
    for category in CATEGORIES:
        lines.append(f"  {category:24s}" + "".join(f"{c[category]:12.2f}" for c in found))
    lines.append(f"  {'all ops':24s}" + "".join(f"{sum(c.values()):12.2f}" for c in found))
    lines.append(f"  {'step (wall)':24s}" + "".join(f"{side['wall']:12.2f}" for side in sides.values()))
    lines.append(f"  {'step (profiled)':24s}" + "".join(f"{side['profiled']:12.2f}" for side in sides.values()))
    return lines


def report(sides):
    """`table`'s lines, then `largest_lines` of each side's largest other ops."""
    return table(sides) + largest_lines({name: side["largest"] for name, side in sides.items()})


def largest_lines(sides):
    """A line per side of `sides` ({side: `largest`'s list}): its other ops that take the most time."""
    return [f"  {side}'s other ops, the largest (ms per step): " + ", ".join(f"{op} {ms:.2f}" for op, ms in ops)
            for side, ops in sides.items()]
