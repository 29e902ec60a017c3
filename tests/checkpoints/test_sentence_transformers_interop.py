"""sentence-transformers folders against sentence-transformers itself (installed for this test only,
into a cached folder beside transformers and PyTorch, never into the environment), both ways:

- a folder laid out as all-MiniLM-L6-v2 (the BERT module at the top, mean pooling, Normalize, a
  max length) exported by export_saved_model.py --export_type=embedder serves what
  `SentenceTransformer(folder).encode` gives, on text of every kind (accents, CJK, a line longer
  than the max length, an empty one);
- an embedding run written by convert_checkpoint.py --direction=to_hf loads in SentenceTransformer
  without a warning and encodes what the run's own model predicts, for every pooling mode.

One subprocess does sentence-transformers' side."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import BertEncoder, BertSentenceEmbedder
from bert_tf.checkpoints import load_original_checkpoint
from bert_tf.runs.record import RunRecord
from tests.peers import installed_peers
from tests.run_scripts.conftest import run_script
from tests.run_scripts.test_run_sentence_embedding import write_st_folder
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config, write_vocab

pytestmark = pytest.mark.slow

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "sat", "on", "mat", "zoe", "cafe", "猫",
         "犬", "naive", "run", "##ning", "##s", ",", ".", "!", "is", "big"]
CONFIG = tiny_config(vocab_size=len(VOCAB))
TEXTS = ["The cat sat on the mat.", "Zoë's café is naïve!", "猫 sat on 犬", "", "runs " * 40 + "cat",
         "a\u00a0big\u3000cat", "THE  CAT\tRUNNING"]

# sentence-transformers' side: encodes TEXTS with each folder of argv[1] (a JSON list) and writes
# {folder: vectors} to argv[2] (npz) and the warnings and log records it saw while loading to argv[3].
_SCRIPT = r"""
import json, logging, sys, warnings
import numpy as np
folders, out, report = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
texts = json.loads(sys.argv[4])
seen = []
class Keep(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            seen.append(f"{record.name}: {record.getMessage()}")
logging.getLogger().addHandler(Keep())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from sentence_transformers import SentenceTransformer
    models = {f: SentenceTransformer(f, device="cpu") for f in folders}
seen += [f"{w.category.__name__}: {w.message}" for w in caught if "sentence_transformers" in w.filename
         or "transformers" in w.filename]
np.savez(out, **{str(i): m.encode(texts, batch_size=3) for i, m in enumerate(models.values())})
json.dump({"seen": seen, "max_seq_length": [m.max_seq_length for m in models.values()]}, open(report, "w"))
"""


def _run_folder(directory, pooling, normalize, seed):
    """A fine-tuning run's folder of the embedder (record, config, vocab, ckpt-5) with random
    weights far from the initializer's; returns (folder, model)."""
    import tensorflow as tf

    directory.mkdir(parents=True)
    weights = random_weights(original_shapes(CONFIG, with_heads=False), seed=seed)
    model = BertSentenceEmbedder(BertEncoder.from_bert_config(CONFIG), pooling, normalize)
    load_original_checkpoint(model, write_tf1_checkpoint(directory / "tf1" / "model.ckpt", weights))
    record = RunRecord(kind="embedder", task_name="pairs", max_seq_length=12,
                       options={"pooling": pooling, "normalize": normalize, "similarity_scale": 20.0})
    record.write(directory)
    CONFIG.to_json_file(str(directory / "bert_config.json"))
    write_vocab(directory / "vocab.txt", VOCAB)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(directory), 2, checkpoint_name="ckpt").save(5)
    return directory, model


def _packed(vocab, texts, length):
    """Our in-graph tokenizer and packer on `texts` at `length` (what run_sentence_embedding.py feeds)."""
    import tensorflow as tf

    from bert_tf.preprocessing import text_preprocessing
    from bert_tf.tasks.classifier.inputs import TextPacker

    tokenizer, packer = text_preprocessing(str(vocab), True, length, CONFIG.vocab_size)
    return {k: v.numpy() for k, v in TextPacker(tokenizer, packer, pair=False)(tf.constant(texts), None).items()}


@pytest.fixture(scope="module")
def encoded(request, tmp_path_factory):
    """Ours and sentence-transformers' vectors of TEXTS: the MiniLM-style folder's export, and each
    pooling's run written to a folder; with what sentence-transformers reported while loading."""
    packages = [installed_peers(request, tmp_path_factory, name) for name in ("st_peers", "hf_peers")]
    work = tmp_path_factory.mktemp("st_interop")
    vocab = write_vocab(work / "vocab.txt", VOCAB)
    minilm = write_st_folder(work / "minilm", pooling="mean", normalize=True, max_seq_length=12, vocab=VOCAB,
                             config=CONFIG)
    result = run_script("export_saved_model.py", "--export_type=embedder", f"--init_checkpoint={minilm}",
                        f"--export_dir={work / 'export'}")
    assert result.returncode == 0, result.stderr[-3000:]
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - its ops

    served = tf.saved_model.load(str(work / "export")).signatures["serving_default"]
    ours = {"minilm": served(text_a=tf.constant(TEXTS))["embeddings"].numpy()}
    folders = [str(minilm)]
    for i, (pooling, normalize) in enumerate((("mean", False), ("cls", True), ("max", False), ("mean_sqrt_len", True))):
        run, model = _run_folder(work / f"run_{pooling}", pooling, normalize, seed=20 + i)
        written = work / f"st_{pooling}"
        result = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={run}",
                            f"--converted_checkpoint_path={written}")
        assert result.returncode == 0, result.stderr[-3000:]
        ours[pooling] = np.asarray(model(_packed(vocab, TEXTS, 12)))
        folders.append(str(written))
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(folders), str(work / "theirs.npz"), str(work / "report.json"),
         json.dumps(TEXTS)],
        capture_output=True, text=True, timeout=600, cwd="/",
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, packages)), "HF_HUB_OFFLINE": "1",
             "TOKENIZERS_PARALLELISM": "false"},
    )
    assert result.returncode == 0, result.stderr[-5000:]
    theirs = np.load(work / "theirs.npz")
    theirs = {name: theirs[str(i)] for i, name in enumerate(ours)}
    return ours, theirs, json.loads((work / "report.json").read_text()), folders


def test_a_minilm_style_folder_exports_what_sentence_transformers_encodes(encoded):
    ours, theirs, report, _ = encoded
    assert report["max_seq_length"][0] == 12
    assert ours["minilm"].shape == (len(TEXTS), CONFIG.hidden_size)
    np.testing.assert_allclose(np.linalg.norm(ours["minilm"], axis=1), 1.0, atol=1e-5)  # the Normalize module
    np.testing.assert_allclose(ours["minilm"], theirs["minilm"], atol=1e-5, rtol=0)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_sqrt_len"])
def test_a_run_written_as_a_sentence_transformers_folder_loads_without_warnings_and_encodes_as_ours(encoded, pooling):
    ours, theirs, report, _ = encoded
    assert report["seen"] == []  # nothing missing, unused or guessed while loading
    assert report["max_seq_length"][1:] == [12] * 4  # the run's length
    np.testing.assert_allclose(ours[pooling], theirs[pooling], atol=1e-5, rtol=0)
