"""Restoring BERT weights from either format a user may hold.

- Google's original layout: a TF checkpoint prefix such as `.../bert_model.ckpt`.
- Ours: a `.keras` file holding a BertEncoder or BertPretrainer.
"""

import contextlib
import os
import tempfile

import keras

from bert_tf.checkpoints.original import load_original_checkpoint
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer


def save_keras_model(model, path):
    """Saves `model` as a `.keras` file, atomically (temporary name in the folder, then rename)."""
    if not path.endswith(".keras"):
        raise ValueError(f"a Keras model file must end in '.keras', got {path!r}")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".keras", dir=directory)
    os.close(fd)
    try:
        model.save(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
    return path


def load_keras_model(path):
    """Loads a `.keras` file written by this package (a BertEncoder or BertPretrainer)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Keras model file {path!r} does not exist")
    return keras.saving.load_model(path, compile=False)


def _encoder_of(model):
    return model.encoder if isinstance(model, BertPretrainer) else model


def restore(model, path):
    """Loads weights into a BertEncoder/BertPretrainer from an original checkpoint or `.keras`.

    From a `.keras` file, an encoder can take the encoder part of a saved pretrainer. The
    hyper-parameters must agree; a mismatch is an error naming both configs.
    """
    if not str(path).endswith(".keras"):
        return load_original_checkpoint(model, path)
    saved = load_keras_model(path)
    if isinstance(model, BertPretrainer) and not isinstance(saved, BertPretrainer):
        raise ValueError(f"{path!r} holds a {type(saved).__name__}, not a BertPretrainer")
    source = _encoder_of(saved) if isinstance(model, BertEncoder) else saved
    ours, theirs = _encoder_of(model).bert_config(), _encoder_of(saved).bert_config()
    if ours != theirs:
        raise ValueError(
            f"{path!r} was saved with a different config:\n  file:  {theirs}\n  model: {ours}"
        )
    model.set_weights(source.get_weights())
    return None
