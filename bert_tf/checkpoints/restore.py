"""Restoring BERT weights from any format a user may hold.

- Google's original layout: a TF checkpoint prefix such as `.../bert_model.ckpt`.
- Ours: run_pretraining's checkpoints (`.../ckpt-N`), or a `.keras` file holding a BertEncoder or
  BertPretrainer.
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


def is_training_checkpoint(path):
    """Whether `path` is an object-based checkpoint (run_pretraining's `ckpt-N`), not the
    original's name-based layout."""
    import tensorflow as tf

    try:
        names = tf.train.list_variables(path)
    except (tf.errors.NotFoundError, ValueError):
        return False
    return any(name == "_CHECKPOINTABLE_OBJECT_GRAPH" for name, _ in names)


def _restore_training_checkpoint(model, path):
    import tensorflow as tf

    # run_pretraining checkpoints a BertPretrainer as "model"; an encoder is restored through
    # one built around it (the heads' values are then simply not used).
    target = model if isinstance(model, BertPretrainer) else BertPretrainer(model)
    status = tf.train.Checkpoint(model=target).restore(path)
    try:
        status.expect_partial().assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(f"checkpoint {path!r} does not hold this model: {e}") from None


def restore(model, path):
    """Loads weights into a BertEncoder/BertPretrainer from Google's original layout, a
    run_pretraining checkpoint (`.../ckpt-N`) or a `.keras` file.

    From a `.keras` file, an encoder can take the encoder part of a saved pretrainer. The
    hyper-parameters must agree; a mismatch is an error naming both configs.
    """
    if not str(path).endswith(".keras"):
        if is_training_checkpoint(path):
            return _restore_training_checkpoint(model, path)
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
