"""Hugging Face folders against transformers itself, both ways, for every class: what we write
loads in transformers (PyTorch, installed for this test only into a cached folder, never into the
environment) without a missing or unused weight and computes what we compute; what transformers'
`save_pretrained` writes loads here and computes what transformers computes; its tokenizer reads
our vocab.txt and casing as ours does. One subprocess does all of transformers' side."""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from bert_tf import BertEncoder, BertPretrainer
from bert_tf.checkpoints import hf, load_original_checkpoint, restore
from bert_tf.runs import registry
from bert_tf.runs.record import RunRecord
from bert_tf.tokenization import FullTokenizer
from tests.hf_folder import ARCHITECTURES, head_shapes
from tests.peers import installed_peers
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config, write_vocab

pytestmark = pytest.mark.slow

CONFIG = tiny_config()
LABELS = ("neg", "neutral", "pos")
CHOICES = 4  # what a run record says when a Hugging Face folder does not (transformers' takes any number)
TEXTS = ["The Cat sat on the MAT.", "unwanted running, a Zoë dog!"]

# transformers' side: loads our folders (argv[2]) and writes its own (argv[3]), on the inputs of
# inputs.npz in argv[1]; outputs in argv[1]/transformers.npz, loading reports in report.json.
_SCRIPT = r"""
import json, os, sys
import numpy as np
import torch
import transformers
from transformers import AutoTokenizer, BertConfig

work, ours, theirs = sys.argv[1:4]
x = dict(np.load(os.path.join(work, "inputs.npz")))
torch.manual_seed(0)
out, report = {}, {"loading": {}, "tokens": {}}


def run(model, name, arch):
    model.eval()
    key = "choice_" if arch == "BertForMultipleChoice" else ""
    inputs = {k: torch.tensor(x[key + k]) for k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        o = model(**inputs)
    for k, v in o.items():
        if torch.is_tensor(v):
            out[f"{name}/{arch}/{k}"] = v.numpy()


for arch in sorted(os.listdir(ours)):
    model, info = getattr(transformers, arch).from_pretrained(os.path.join(ours, arch), output_loading_info=True)
    report["loading"][arch] = {k: sorted(map(str, v)) for k, v in info.items()}
    run(model, "ours", arch)
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(ours, arch))
    report["tokens"][arch] = [tokenizer(t)["input_ids"] for t in json.loads(sys.argv[4])]

sizes = dict(vocab_size=25, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=24, type_vocab_size=2, hidden_act="gelu")
labels = dict(id2label={0: "neg", 1: "neutral", 2: "pos"}, label2id={"neg": 0, "neutral": 1, "pos": 2})
for arch in json.loads(sys.argv[5]):  # its question answering head has num_labels (2) outputs: no labels
    config = BertConfig(**sizes, **({} if arch == "BertForQuestionAnswering" else labels))
    model = getattr(transformers, arch)(config)
    with torch.no_grad():  # far from the initializer, so a mis-mapped weight shows
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    model.save_pretrained(os.path.join(theirs, arch))
    transformers.BertTokenizer(os.path.join(work, "vocab.txt"), do_lower_case=False).save_pretrained(
        os.path.join(theirs, arch))
    run(model, "theirs", arch)
np.savez(os.path.join(work, "transformers.npz"), **out)
with open(os.path.join(work, "report.json"), "w") as f:
    json.dump(report, f)
"""


def _inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, CONFIG.vocab_size, size=(2, 8)).astype(np.int32)
    mask = np.array([[1] * 8, [1] * 5 + [0] * 3], np.int32)
    types = np.array([[0] * 4 + [1] * 4, [0] * 3 + [1] * 2 + [0] * 3], np.int32)
    choice = lambda a: np.stack([np.roll(a, c, axis=-1) for c in range(CHOICES)], axis=1)  # noqa: E731
    choice_mask = np.ones((2, CHOICES, 8), np.int32)
    return {"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": types,
            "choice_input_ids": choice(ids), "choice_attention_mask": choice_mask,
            "choice_token_type_ids": choice(types)}


def _model(architecture):
    kind = ARCHITECTURES[architecture][0]
    encoder = BertEncoder.from_bert_config(CONFIG)
    if kind == "encoder":
        return encoder, None
    if kind == "pretrainer":
        return BertPretrainer(encoder), None
    task = registry.get(kind)
    label_kind = (task.label_kinds or ("single",))[0]
    values = {"labels": LABELS, "label_kind": label_kind, "num_choices": CHOICES}
    record = RunRecord(kind=kind, task_name="t", **{k: v for k, v in values.items() if k in task.record_defaults})
    return task.build_model(record, encoder), record


def _ours(model, x, architecture):
    """Our outputs, under transformers' output names."""
    if architecture == "BertForMultipleChoice":
        keys = {"input_word_ids": "choice_input_ids", "input_mask": "choice_attention_mask",
                "input_type_ids": "choice_token_type_ids"}
    else:
        keys = {"input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids"}
    inputs = {ours: x[theirs] for ours, theirs in keys.items()}
    if architecture == "BertModel":
        out = model(inputs)
        return {"last_hidden_state": out["sequence_output"], "pooler_output": out["pooled_output"]}
    if architecture == "BertForPreTraining":
        positions = np.tile(np.arange(x["input_ids"].shape[1], dtype=np.int32), (x["input_ids"].shape[0], 1))
        out = model({**inputs, "masked_lm_positions": positions})
        return {"prediction_logits": out["masked_lm_logits"], "seq_relationship_logits": out["next_sentence_logits"]}
    if architecture == "BertForQuestionAnswering":
        out = model(inputs)
        return {"start_logits": out["start_logits"], "end_logits": out["end_logits"]}
    return {"logits": model(inputs)}


@pytest.fixture(scope="module")
def interop(request, tmp_path_factory):
    """Our folder of each class written (with its outputs), transformers run on them and writing
    its own; returns the work folder, our outputs, transformers' outputs and its report."""
    packages = installed_peers(request, tmp_path_factory, "hf_peers")
    work = tmp_path_factory.mktemp("hf_interop")
    vocab = write_vocab(work / "vocab.txt", VOCAB)
    x = _inputs()
    np.savez(work / "inputs.npz", **x)
    ours = {}
    for i, architecture in enumerate(ARCHITECTURES):
        model, record = _model(architecture)
        shapes = original_shapes(CONFIG, with_heads=architecture == "BertForPreTraining")
        weights = random_weights({**shapes, **head_shapes(architecture, CONFIG, len(LABELS))}, seed=10 + i)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the pooler of QA and NER models
            load_original_checkpoint(model, write_tf1_checkpoint(work / f"tf1_{architecture}" / "model.ckpt", weights))
        hf.write_folder(model, str(work / "ours" / architecture), vocab, True, record)
        ours[architecture] = {k: np.asarray(v) for k, v in _ours(model, x, architecture).items()}
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(work), str(work / "ours"), str(work / "theirs"), json.dumps(TEXTS),
         json.dumps(list(ARCHITECTURES))],
        capture_output=True, text=True, timeout=600, cwd="/",
        env={**os.environ, "PYTHONPATH": str(packages), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
    )
    assert result.returncode == 0, result.stderr[-5000:]
    theirs = dict(np.load(work / "transformers.npz"))
    return work, x, ours, theirs, json.loads((work / "report.json").read_text()), result.stderr


def test_transformers_loads_our_folders_without_a_missing_or_unused_weight(interop):
    _, _, _, _, report, stderr = interop
    assert sorted(report["loading"]) == sorted(ARCHITECTURES)
    for architecture, info in report["loading"].items():
        assert all(not v for v in info.values()), (architecture, info)
    for words in ("newly initialized", "were not used", "not initialized"):
        assert words not in stderr


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_transformers_computes_what_we_compute_on_our_folders(interop, architecture):
    _, _, ours, theirs, _, _ = interop
    for name, value in ours[architecture].items():
        np.testing.assert_allclose(theirs[f"ours/{architecture}/{name}"], value, atol=1e-5, rtol=0, err_msg=name)


def test_transformers_tokenizer_reads_our_vocab_and_casing_as_ours_does(interop):
    _, _, _, _, report, _ = interop
    tokenizer = FullTokenizer(str(interop[0] / "vocab.txt"), do_lower_case=True)
    expected = [tokenizer.convert_tokens_to_ids(["[CLS]", *tokenizer.tokenize(t), "[SEP]"]) for t in TEXTS]
    for architecture, ids in report["tokens"].items():
        assert ids == expected, architecture


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_we_compute_what_transformers_computes_on_its_own_folders(interop, architecture):
    work, x, _, theirs, _, _ = interop
    folder = str(work / "theirs" / architecture)
    model, record = hf.folder_model(folder)
    if record is not None:
        assert record.do_lower_case is False  # its tokenizer_config.json
        if record.task_kind.label_kinds:
            assert record.labels == LABELS
    assert restore(model, folder) is None  # every weight used, none missing
    for name, value in _ours(model, x, architecture).items():
        # Two libraries' float32 kernels (TensorFlow's oneDNN or Eigen, PyTorch's) sum in other orders: with
        # Eigen's, one output of 0.3022 came out 1.05e-5 away, a relative 3.5e-5.
        np.testing.assert_allclose(np.asarray(value), theirs[f"theirs/{architecture}/{name}"], atol=1e-5, rtol=1e-5)
