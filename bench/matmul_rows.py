"""The matrix products of a served request, alone: TensorFlow's (the kernels our exports run)
against ONNX Runtime's, for a few rows (one text) and for a batch's many, at BERT-Base's shapes.
Where batch-1 serving trails ONNX Runtime (README, "Where the batch-1 gap lies"), this shows how
much of it the products are.

    python bench/matmul_rows.py [--rows=21,768 --shapes=768x768,768x3072,3072x768 --chain=12
                                 --calls=20 --threads=N --peer_dirs=DIR]
    python bench/matmul_rows.py --smoke  # small shapes, a few calls (the suite's)

For each row count and shape (in x out), one graph multiplies the same `[rows, in]` input by
--chain different `[in, out]` weight matrices (as a model's layers do: no weight stays in cache
from one product to the next) and sums the products; the time of a call divided by --chain is
one product's (the call's own overhead, a few hundred microseconds in TensorFlow, spread over the
chain). TensorFlow: a `tf.function` of `tf.matmul`s on float32 variables. ONNX Runtime
(not a dependency: `pip install --target DIR onnxruntime onnx`, then --peer_dirs=DIR; skipped
with a message when missing): the same graph of MatMul nodes with every graph optimization, in a
process of its own (this script again, with --side=ort), so that the two thread pools never
compete. Both get --threads intra-op threads and run one product at a time, as in a model, where
each product waits for the one before: the chain's products are independent of each other, and
TensorFlow's inter-op threads would otherwise run two at once, each on --threads threads (so
TensorFlow runs with one inter-op thread here; ONNX Runtime runs a graph's nodes in sequence by
default). Medians of --calls calls after two warm-up calls.

The last two columns: TensorFlow with the weights as constants of the graph (and a bias, as a
Dense has: oneDNN keeps a re-laid copy of a constant weight only in its fused product-and-bias
kernel), as a frozen export would hold them. oneDNN then runs a kernel on blocked weights, laid
out once and kept, instead of re-packing them every call, but the layout it picks depends on the
rows, and TensorFlow keeps the first call's: "TF consts" is timed after a first call of the same
rows, "after N rows" after a first call of the largest --rows, as a service's first request may be
a batch (for the largest rows themselves the two are one case, timed once). Where the two layouts
differ, each call re-lays the weights.
"""

import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("rows", ["21", "768"], "Rows of the input: a text's word pieces, or a batch's (32 x 24).")
flags.DEFINE_list("shapes", ["768x768", "768x3072", "3072x768"], "Weight shapes, in x out (BERT-Base's).")
flags.register_validator("rows", lambda v: all(r.isdigit() and int(r) > 0 for r in v), "must be positive integers")
flags.register_validator("shapes", lambda v: all(re.fullmatch(r"[1-9]\d*x[1-9]\d*", s) for s in v),
                         "must be IN x OUT sizes written INxOUT, e.g. 768x3072")
flags.DEFINE_integer("chain", 12, "Products per graph, each with its own weights (BERT-Base has 12 layers).",
                     lower_bound=1)
flags.DEFINE_integer("calls", 20, "Timed calls per graph.", lower_bound=1)
flags.DEFINE_integer("threads", os.cpu_count(), "Intra-op threads of each side.")
flags.DEFINE_list("peer_dirs", [], "Folders holding onnxruntime and onnx (appended to sys.path).")
flags.DEFINE_bool("smoke", False, "Small shapes, a few calls (flags given still win).")
flags.DEFINE_enum("side", None, ["ort"], "Internal: time ONNX Runtime's products and print them as JSON.")

SMOKE = {"rows": ["3", "16"], "shapes": ["32x64"], "chain": 2, "calls": 3}


def most_rows():
    """The largest --rows: the first call before the "after N rows" timing."""
    return max(int(r) for r in FLAGS.rows)


def cases():
    return [(int(r), *(int(v) for v in shape.split("x"))) for r in FLAGS.rows for shape in FLAGS.shapes]


def weights(k, n):
    rng = np.random.default_rng(k * n)
    return [(rng.standard_normal((k, n)) * 0.02).astype(np.float32) for _ in range(FLAGS.chain)]


def median_us(call):
    """Microseconds per product: the median call over --calls, divided by --chain."""
    for _ in range(2):
        call()
    times = []
    for _ in range(FLAGS.calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / FLAGS.chain * 1e6


def inputs(rows, k):
    return np.random.default_rng(rows).standard_normal((rows, k)).astype(np.float32)


def constant_products(tf, matrices, bias):
    """The chain with `matrices` and `bias` as constants of the traced graph (Const nodes)."""
    return lambda x: tf.add_n([tf.nn.bias_add(tf.matmul(x, tf.constant(w)), tf.constant(bias)) for w in matrices])


def tensorflow_side():
    """{case: microseconds} for the weights as variables (as our exports hold them), and for them
    as graph constants with a bias, timed once after a call of the case's own rows and once after
    a call of the largest --rows (see the module's docstring)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)  # one product at a time (the module's docstring)
    found, most = {}, most_rows()
    for rows, k, n in cases():
        matrices = weights(k, n)
        variables = [tf.Variable(w) for w in matrices]
        x = tf.constant(inputs(rows, k))
        products = tf.function(lambda x, variables=variables: tf.add_n([tf.matmul(x, w) for w in variables]))
        key = f"{rows} {k}x{n}"
        found[key] = {"variables": median_us(lambda products=products, x=x: products(x))}
        bias = np.random.default_rng(n).standard_normal(n).astype(np.float32)  # zeros would be folded away
        signature = [tf.TensorSpec([None, k], tf.float32)]
        for first in ("own", "most") if rows != most else ("own",):  # the largest rows: one case, timed once
            graph = tf.function(constant_products(tf, matrices, bias), input_signature=signature)
            graph(x if first == "own" else tf.constant(inputs(most, k)))  # the call whose layout is kept
            found[key][f"constants, {first} rows first"] = median_us(lambda graph=graph, x=x: graph(x))
        found[key].setdefault("constants, most rows first", found[key]["constants, own rows first"])
    return found, f"TensorFlow {tf.__version__}"


def ort_side():
    sys.path.extend(FLAGS.peer_dirs)
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    options = ort.SessionOptions()
    options.intra_op_num_threads = FLAGS.threads
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    found = {}
    for rows, k, n in cases():
        ws = [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights(k, n))]
        nodes = [helper.make_node("MatMul", ["x", w.name], [f"y{i}"]) for i, w in enumerate(ws)]
        nodes.append(helper.make_node("Sum", [f"y{i}" for i in range(len(ws))], ["y"]))
        graph = helper.make_graph(nodes, "products", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])], ws)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        x = inputs(rows, k)
        found[f"{rows} {k}x{n}"] = median_us(lambda session=session, x=x: session.run(None, {"x": x}))
    return found, f"ONNX Runtime {ort.__version__}"


def ort_in_its_process():
    """ONNX Runtime's figures from a process of its own, or None (with a message) when not installed."""
    sys.path.extend(d for d in FLAGS.peer_dirs if d not in sys.path)
    if not all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx")):
        print("ONNX Runtime skipped: onnxruntime and onnx are not installed (--peer_dirs)")
        return None
    flag_names = ("rows", "shapes", "chain", "calls", "threads", "peer_dirs")
    argv = [f"--{name}={','.join(v) if isinstance(v, list) else v}" for name in flag_names
            for v in [FLAGS[name].value]]
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--side=ort", *argv],
                            capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"the ONNX Runtime side failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            if not FLAGS[name].present:  # flags given still win
                setattr(FLAGS, name, value)
    if FLAGS.side == "ort":
        print(json.dumps(ort_side()))
        return
    ours, version = tensorflow_side()
    peer = ort_in_its_process()
    print(f"{FLAGS.chain} products per graph, {FLAGS.threads} threads, float32; {version}"
          + (f", {peer[1]}" if peer else ""))
    most = most_rows()
    print(f"  {'rows  in x out':18s} {'TensorFlow us':>14s} {'ONNX Runtime us':>16s} {'TF / ORT':>9s}"
          f" {'TF consts us':>13s} {'TF consts after ' + str(most) + ' rows us':>26s}")
    for key, times in ours.items():
        other = peer[0][key] if peer else None
        rows, shape = key.split()
        line = f"  {rows:>5s} {shape:12s} {times['variables']:14.1f}"
        line += f" {other:16.1f} {times['variables'] / other:8.2f}x" if other is not None else f" {'-':>16s} {'-':>9s}"
        line += f" {times['constants, own rows first']:13.1f} {times['constants, most rows first']:26.1f}"
        print(line, flush=True)


if __name__ == "__main__":
    app.run(main)
