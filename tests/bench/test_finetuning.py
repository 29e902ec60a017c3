"""bench/finetuning.py in its smoke size, run from the repository root as its docstring says: our
loop's throughput on sentence pairs, with batches cut to their longest row (XLA off and on) and at
fixed padding, beside transformers on PyTorch (the interoperability tests' peer folder, both
paddings in one process of its own); with and without LoRA, their trainable parameters and optimizer state
(stated here by hand for the smoke config), the separable task's accuracy line, and this machine's
jit_compile choice saved (--save_defaults) where $BERT_TF_SPEED_FILE says; and --profile's table of
both steps' op time by category."""

import json
import re

import pytest

from tests.bench.smoke import finished_bench, profile_table
from tests.peers import installed_peers

pytestmark = pytest.mark.slow


def test_smoke_run_measures_full_fine_tuning_and_lora(request, tmp_path_factory, tmp_path):
    peers = installed_peers(request, tmp_path_factory, "hf_peers")
    # As a user starts it: no PYTHONPATH, the bench finds this checkout's bert_tf itself.
    speed_file = tmp_path / "speed" / "defaults.json"
    result = finished_bench("finetuning.py", "--smoke", "--lora_rank=4", f"--peer_path={peers}", "--save_defaults",
                            "--padding=dynamic,fixed", env={"BERT_TF_SPEED_FILE": str(speed_file)}, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    out = result.stdout
    assert "config: L=2 H=32 A=2 I=64 vocab=1000 seq=32 batch=8 length_bucket=1 without XLA, 8 with," in out
    # The smoke run takes sentence pairs only (single sentences differ in the data alone).
    assert "text=single" not in out
    text = out.split("text=pairs: ")[1]
    assert re.match(r"64 examples, [\d.]+ word pieces on average", text), text
    # XLA on only where --save_defaults's choice reads it (the default flags' dynamic padding).
    names = ["bert_tf dynamic xla=False", "bert_tf dynamic xla=True", "bert_tf fixed xla=False",
             "bert_tf lora=4 dynamic xla=False", "pytorch dynamic eager", "pytorch fixed eager"]
    rows = re.findall(r"^  (\S.*?) +: +[\d.]+ examples/s", text, re.M)
    assert rows == names, text
    assert re.search(r"^  default flags \(dynamic, jit_compile unset = False here\) / PyTorch dynamic: "
                     r"[\d.]+x \(medians\)", text, re.M), text
    assert re.search(r"^  dynamic / fixed padding \(xla=False\): [\d.]+x", text, re.M), text
    assert re.search(r"^  fixed padding \(xla=False\) / PyTorch fixed padding: [\d.]+x", text, re.M), text
    assert re.search(r"^  XLA on / off, dynamic padding: [\d.]+x", text, re.M), text
    assert "XLA on / off, fixed padding" not in text
    # --save_defaults: XLA on when it made the default flags' step (dynamic padding) faster, as printed.
    on, off = (float(re.search(rf"^  bert_tf dynamic xla={x} +: +([\d.]+) ", text, re.M)[1]) for x in (True, False))
    saved = json.loads(speed_file.read_text(encoding="utf-8"))
    choice = saved["choices"]["jit_compile"]
    assert choice["value"] is (on > off) and abs(choice["xla_speedup"] - on / off) < 1e-3 * on / off
    assert set(saved["signature"]) == {"platform", "cpu", "cores", "tensorflow"}
    assert f"saved jit_compile={on > off} for this machine" in out and f"to {speed_file};" in out
    # oneDNN on and off, each setting in processes of its own: training and prediction, saved as
    # printed, where bert_tf.kernels reads them without TensorFlow.
    from bert_tf import kernels

    for work in ("training", "prediction"):
        rates = {v: [float(x) for x in re.findall(rf"^round \d, TF_ENABLE_ONEDNN_OPTS={v}: .*?{work} ([\d.]+) "
                                                  r"examples/s", out, re.M)] for v in ("1", "0")}
        assert len(rates["1"]) == len(rates["0"]) == 1, out
        choice = saved["choices"][f"onednn_{work}"]
        assert choice["value"] is (rates["1"][0] > rates["0"][0])
        assert abs(choice["onednn_speedup"] - rates["1"][0] / rates["0"][0]) < 1e-2 * choice["onednn_speedup"]
        assert kernels.measured(work, str(speed_file)) is choice["value"]
        assert f"saved onednn_{work}={choice['value']} to {speed_file}" in out
    # The smoke model: embeddings (1000 + 512 + 2) x 32 + LayerNorm 64; 2 blocks of 8,544; pooler
    # 1,056; head 66. LoRA of rank 4: 2 x (4 x 4 x (32 + 32) + 2 x 4 x (32 + 64)) = 3,584 adapter numbers.
    full, adapters, head = (1000 + 512 + 2) * 32 + 64 + 2 * 8544 + 1056 + 66, 3584, 66
    assert f"Trainable parameters: {full:,} of {full:,} (100.00%)" in out
    assert f"Trainable parameters: {adapters + head:,} of {full + adapters:,} (5.19%)" in out
    # AdamW: two moments per trainable weight (41 in all; LoRA: 2 x 12 adapters and the head's 2), and its step.
    assert f"optimizer state: {2 * 41 + 1} variables, {2 * full + 1:,} numbers" in out
    assert f"optimizer state: {2 * 26 + 1} variables, {2 * (adapters + head) + 1:,} numbers" in out
    assert re.search(r"^separable task \(6 steps of 8, seq 32\), dev accuracy: full fine-tuning [\d.]+ .* "
                     r"lora=4 [\d.]+ \(learning rate 0.001\)$", out, re.M), out


def test_profile_splits_both_steps_by_the_same_categories(request, tmp_path_factory):
    peers = installed_peers(request, tmp_path_factory, "hf_peers")
    result = finished_bench("finetuning.py", "--smoke", "--profile", f"--peer_path={peers}", timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    out = result.stdout
    assert "profile, text=pairs, dynamic padding, XLA off, 2 steps" in out, out
    profile_table(out)
    refused = finished_bench("finetuning.py", "--smoke", "--profile", "--padding=fixed", "--lora_rank=4")
    assert refused.returncode != 0
    assert ("--profile profiles one pass of dynamic padding without XLA: it takes no --lora_rank, --padding"
            in refused.stderr)
