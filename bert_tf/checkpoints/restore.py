"""Restoring BERT weights from any format a user may hold.

- Google's original layout: a TF checkpoint prefix such as `.../bert_model.ckpt`.
- Ours: the training loop's checkpoints (`.../ckpt-N` of run_pretraining or a fine-tuning
  script), or a `.keras` file holding a BertEncoder, BertPretrainer or task model.
- Hugging Face's: a folder with `config.json` and `model.safetensors` or `tf_model.h5`
  (`bert_tf.checkpoints.hf`).
"""

import contextlib
import gc
import os
import re
import secrets

import keras

from bert_tf.checkpoints import hf
from bert_tf.checkpoints.original import LoadReport, check_finite, damaged, load_original_checkpoint
from bert_tf.io_utils import owner_is_gone, owner_tag
from bert_tf.models import lora
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.runs import record as run_record


def save_keras_model(model, path):
    """Saves `model` as a `.keras` file, atomically (temporary name in the folder, then rename).

    The file gets the user's umask, as any file Keras writes: the temporary name is new, so Keras
    creates it (a file made by mkstemp would keep mkstemp's 0600 through the rename). Temporary
    files left in the folder by saves whose process is gone are removed.

    Args:
        model: The Keras model (an encoder, pretrainer or task model).
        path: The file to write; its folder is made when missing.

    Returns:
        `path`.

    Raises:
        ValueError: `path` does not end in ".keras".
    """
    if not path.endswith(".keras"):
        raise ValueError(f"a Keras model file must end in '.keras', got {path!r}")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    base = os.path.basename(path)
    for name in os.listdir(directory):  # left by saves killed mid-write
        owner = re.fullmatch(re.escape(f".{base}.") + r"([0-9a-f]{8}-\d+)\.[0-9a-f]{8}\.keras", name)
        if owner and owner_is_gone(owner.group(1)):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(directory, name))
    tmp = os.path.join(directory, f".{base}.{owner_tag()}.{secrets.token_hex(4)}.keras")
    try:
        model.save(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
    return path


def load_keras_model(path):
    """Loads a `.keras` file written by this package (an encoder, pretrainer or task model).

    The model is loaded without compiling it.

    Args:
        path: The `.keras` file.

    Returns:
        The Keras model.

    Raises:
        FileNotFoundError: `path` is not a file.
        ValueError: A weight holds NaN or infinity (naming the file and the weight).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Keras model file {path!r} does not exist")
    model = keras.saving.load_model(path, compile=False)
    check_model_finite(model, path)
    return model


def check_model_finite(model, source):
    """`check_finite` on the weights of `model`, read from `source`, by their Keras paths."""
    check_finite({w.path: keras.ops.convert_to_numpy(w) for w in model.weights}, source)


def _encoder_of(model):
    return getattr(model, "encoder", model)


def _head_not_found(model):
    """The report of a task model whose head the source did not have (left as initialised)."""
    return LoadReport(loaded=[], unused=[], ignored=[], not_found=[f"the {type(model).__name__} head"])


def is_training_checkpoint(path):
    """Whether `path` is an object-based checkpoint (the loop's `ckpt-N`), not the original's
    name-based layout."""
    import tensorflow as tf

    try:
        names = tf.train.list_variables(path)
    except (tf.errors.OpError, ValueError, RuntimeError):  # not a TensorFlow checkpoint at all
        return False
    return any(name == "_CHECKPOINTABLE_OBJECT_GRAPH" for name, _ in names)


def _restore_training_checkpoint(model, path):
    """The whole model when the checkpoint holds it (e.g. a fine-tuned classifier), else its
    encoder alone (a pre-training checkpoint starting a fine-tuning run, or any of our
    checkpoints into a bare encoder): the loop saves every model as "model", and the object
    graph reaches the encoder as `model.encoder` whatever the heads. Values are checked after
    restoring (`check_finite`): reading the checkpoint twice would cost more than the check."""
    import tensorflow as tf

    if not isinstance(model, BertEncoder):
        status, problem = _quiet_restore(tf.train.Checkpoint(model=model), path)
        if problem is not None:  # e.g. the same kind of model for another label set
            raise ValueError(f"checkpoint {path!r} holds a {type(model).__name__} of other shapes: {problem}")
        try:
            status.assert_existing_objects_matched()
            check_model_finite(model, path)
            return None
        except AssertionError:
            if isinstance(model, BertPretrainer):
                raise ValueError(f"checkpoint {path!r} does not hold a BertPretrainer") from None
    status, problem = _quiet_restore(tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=_encoder_of(model))), path)
    try:
        if problem is not None:
            raise AssertionError(problem)
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(f"checkpoint {path!r} does not hold this model: {e}") from None
    check_model_finite(_encoder_of(model), path)
    return None if isinstance(model, BertEncoder) else _head_not_found(model)


def _quiet_restore(checkpoint, path):
    """`checkpoint.restore(path)` as (status, None), or (None, the reason) when values do not
    fit; a damaged file is a ValueError saying so. A failed restore leaves TensorFlow objects that
    log a warning per unmatched value when collected: collected here, with its logger quiet."""
    import tensorflow as tf

    problem = None
    try:
        return checkpoint.restore(path).expect_partial(), None
    except ValueError as e:
        problem = str(e)
    except (tf.errors.OpError, IndexError) as e:
        raise damaged(path, e) from None
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        gc.collect()
    finally:
        logger.setLevel(level)
    return None, problem


def restore(model, path):
    """Loads weights into a BertEncoder, BertPretrainer or task model (e.g. BertClassifier).

    The source is Google's original layout, one of our training checkpoints (`.../ckpt-N`; a
    LoRA run's is read with its adapters merged into plain kernels), a folder (a run's latest
    checkpoint, the bert_model.ckpt of Google's download, or a Hugging Face folder) or a `.keras`
    file.

    A task model takes its head too when the source has one of the same kind (a fine-tuned
    model); otherwise only the encoder is loaded and the head keeps its initialisation
    (fine-tuning from a pre-trained model). A head the source holds with other shapes (another
    label set) is left as initialised when the source is a `.keras` file, and is a ValueError from
    any other source. The hyper-parameters must agree; a mismatch is a ValueError (for a `.keras`
    file, one naming both configs).

    Args:
        model: A BertEncoder, BertPretrainer or task model.
        path: The checkpoint prefix, folder or `.keras` file (a str or path-like).

    Returns:
        A `LoadReport` when something was left out (variables of the source the model does not
        use, or a head the source did not have), else None.

    Raises:
        FileNotFoundError: `path` is a folder without a checkpoint, or nothing can be read there.
        ValueError: A truncated or corrupted checkpoint (saying so); a weight holding NaN or
            infinity (named with the file: `original.check_finite`); a source that does not
            hold this model (other hyper-parameters or head shapes, or no BertPretrainer for a
            BertPretrainer).
    """
    path = os.fspath(path)
    if hf.is_hf_folder(path):
        report = hf.load(model, path)
        return report if report.unused or report.not_found else None
    if os.path.isdir(path):  # a run's output folder: its latest checkpoint
        import tensorflow as tf

        latest = tf.train.latest_checkpoint(path)
        if latest is None and os.path.isfile(os.path.join(path, "bert_model.ckpt.index")):
            latest = os.path.join(path, "bert_model.ckpt")  # Google's download has no state file
        if latest is None:
            raise FileNotFoundError(f"{path!r} is a folder without a checkpoint")
        path = latest
    if not path.endswith(".keras"):
        if is_training_checkpoint(path):
            if adapters := run_record.adapters(path):  # a LoRA run's: read with them, merged into plain kernels
                return lora.restore_merged(model, *adapters, lambda twin: _restore_training_checkpoint(twin, path))
            return _restore_training_checkpoint(model, path)
        report = load_original_checkpoint(model, path)
        return report if report.unused or report.not_found else None
    saved = load_keras_model(path)
    if isinstance(model, BertPretrainer) and not isinstance(saved, BertPretrainer):
        raise ValueError(f"{path!r} holds a {type(saved).__name__}, not a BertPretrainer")
    ours, theirs = _encoder_of(model).bert_config(), _encoder_of(saved).bert_config()
    if ours != theirs:
        raise ValueError(
            f"{path!r} was saved with a different config:\n  file:  {theirs}\n  model: {ours}"
        )
    if type(saved) is type(model) and [w.shape for w in saved.weights] == [w.shape for w in model.weights]:
        model.set_weights(saved.get_weights())
        return None
    _encoder_of(model).set_weights(_encoder_of(saved).get_weights())
    return None if isinstance(model, BertEncoder) else _head_not_found(model)
