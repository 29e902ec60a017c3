"""bench/serving.py in its smoke size, run from the repository root as its docstring says: our
exports at fixed length, at the request's length without and with XLA, with int8 weights and in
bfloat16, each timed in a process of its own started with this run's flags, and those without XLA
again from a process keeping oneDNN's weight layouts, each agreeing with the fixed-length export;
the peers skipped with a message (none installed here); --save_defaults saving XLA's choice for
float exports where $BERT_TF_SPEED_FILE says, beside the fine-tuning one."""

import json
import math
import re

import pytest

from bert_tf.export.common import FROZEN_WEIGHTS_ENV
from bert_tf.training import speed
from tests.bench.smoke import finished_bench

pytestmark = pytest.mark.slow

FINE_TUNING = {"value": False, "xla_speedup": 0.62, "measured_by": "python bench/finetuning.py --save_defaults"}


def _bench(*flags, env=None):
    # As a user starts it: no PYTHONPATH, the bench finds this checkout's bert_tf itself (in its side's process too).
    return finished_bench("serving.py", *flags, env=env, timeout=600)


def test_smoke_run_times_every_export_skips_missing_peers_and_saves_the_xla_and_onednn_choices(tmp_path):
    speed_file = tmp_path / "speed" / "defaults.json"
    speed_file.parent.mkdir()
    signature = speed.machine_signature("cpu")  # this machine's: the fine-tuning choice must be kept
    speed_file.write_text(json.dumps({"signature": signature, "choices": {"jit_compile": FINE_TUNING}}))
    ours = ("fixed", "dynamic", "dynamic+xla", "int8", "bf16")
    result = _bench("--smoke", "--intra_op_threads=1", "--save_defaults", f"--ours={','.join(ours)}",
                    env={"BERT_TF_SPEED_FILE": str(speed_file)})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    out = result.stdout
    assert ("tiny: L=2 H=32 A=2 I=64, vocab 30522, seq_length 32, length_bucket of each export (1 without XLA, "
            "8 with it)") in out
    # Our side's own process reports the thread count it was given, and exports --ours: the flags reach it.
    assert re.search(r"^  ours: TensorFlow \S+, threads intra 1 inter 0$", out, re.M), out
    # The exports without XLA again, in a process started with the library's variable set.
    assert f"  ours+frozen: the same exports, {FROZEN_WEIGHTS_ENV}=1" in out
    exported = [out.index(f"exported {name} in ") for name in ours]
    assert exported == sorted(exported), out
    number = r"\d+\.\d"
    rows = {}
    for name, agrees in (("fixed", True), ("dynamic", True), ("dynamic+xla", True), ("int8", False),
                         ("bf16", False), ("fixed+frozen", True), ("dynamic+frozen", True), ("bf16+frozen", False),
                         ("fixed+onednn", True), ("dynamic+onednn", True), ("fixed+eigen", True),
                         ("dynamic+eigen", True), ("tokenize+pack", None)):
        row = re.search(rf"^  {re.escape(name)} +({number}) +({number}) +({number}) *(\S*)$", out, re.M)
        assert row, (name, out)
        rows[name] = [float(row.group(i)) for i in (1, 3)]  # p50 ms, sequences/s
        if agrees is not None:  # probabilities against the fixed export: equal, or int8's / bfloat16's rounding
            difference = float(row.group(4))
            assert difference < 1e-5 if agrees else difference < 1e-2, (name, difference)
    assert "peers skipped" in out or "onnxruntime fp32" in out
    memory = re.search(r"^  peak memory per side \(.*\): ours ([\d.]+) GiB, ours_frozen ([\d.]+) GiB", out, re.M)
    assert memory and all(0.1 < float(gib) < 64 for gib in memory.groups()), out
    # --save_defaults: XLA on for float exports when sqrt(p50 without / p50 with x throughput with /
    # throughput without) > 1, from the printed figures (rounded to 0.1: the bounds of what they can be).
    (p50_off, rate_off), (p50_on, rate_on) = rows["dynamic"], rows["dynamic+xla"]
    low = math.sqrt(max(p50_off - 0.05, 0) / (p50_on + 0.05) * (rate_on - 0.05) / (rate_off + 0.05))
    high = math.sqrt((p50_off + 0.05) / max(p50_on - 0.05, 1e-9) * (rate_on + 0.05) / max(rate_off - 0.05, 1e-9))
    saved = json.loads(speed_file.read_text(encoding="utf-8"))
    assert saved["signature"] == signature and saved["choices"]["jit_compile"] == FINE_TUNING
    serving = saved["choices"]["serving_jit_compile"]
    assert low * 0.999 <= serving["xla_speedup"] <= high * 1.001, (low, serving, high)
    if low > 1 or high < 1:
        assert serving["value"] is (low > 1), (low, serving, high)
    assert serving["measured_by"] == "python bench/serving.py --save_defaults"
    assert (f"saved serving_jit_compile={serving['value']} for this machine to {speed_file}; export_saved_model.py "
            "uses it") in out
    # oneDNN on / off for the float export without XLA, each from a process of its own, by the same rule.
    assert "  ours+onednn: the same exports, TF_ENABLE_ONEDNN_OPTS=1" in out
    assert "  ours+eigen: the same exports, TF_ENABLE_ONEDNN_OPTS=0" in out
    assert "bf16+onednn" not in out and "int8+eigen" not in out  # float32 exports only
    (p50_off, rate_off), (p50_on, rate_on) = rows["dynamic+eigen"], rows["dynamic+onednn"]
    low = math.sqrt(max(p50_off - 0.05, 0) / (p50_on + 0.05) * (rate_on - 0.05) / (rate_off + 0.05))
    high = math.sqrt((p50_off + 0.05) / max(p50_on - 0.05, 1e-9) * (rate_on + 0.05) / max(rate_off - 0.05, 1e-9))
    onednn = saved["choices"]["onednn_serving"]
    assert low * 0.999 <= onednn["onednn_speedup"] <= high * 1.001, (low, onednn, high)
    assert f"saved onednn_serving={onednn['value']} to {speed_file}" in out
    from bert_tf import kernels

    assert kernels.measured("serving", str(speed_file)) is onednn["value"]


def test_save_defaults_needs_both_float_exports():
    result = _bench("--smoke", "--save_defaults", "--ours=fixed,dynamic+xla")
    assert result.returncode != 0
    assert "--save_defaults measures dynamic and dynamic+xla: --ours=fixed,dynamic+xla lacks one" in result.stderr
