import json
import os
import subprocess
import sys
import types

import pytest

from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config, write_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def google_model_dir(tmp_path):
    """A tiny model folder laid out like Google's uncased_L-12_H-768_A-12 release."""
    d = tmp_path / "uncased_tiny"
    d.mkdir()
    config = tiny_config()
    (d / "bert_config.json").write_text(json.dumps({**config.to_dict(), "directionality": "bidi"}, indent=2))
    write_vocab(d / "vocab.txt", VOCAB)
    weights = random_weights(original_shapes(config), seed=3)
    write_tf1_checkpoint(d / "bert_model.ckpt", weights)
    return types.SimpleNamespace(path=d, config=config, weights=weights, prefix=str(d / "bert_model.ckpt"))


def run_script(name, *flags, timeout=300):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    return subprocess.run(
        [sys.executable, os.path.join(REPO, "run_scripts", name), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )
