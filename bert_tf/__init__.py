"""bert_tf: BERT (Devlin et al., 2018) in TensorFlow / Keras 3, compatible with Google's release.

The modeling code (`bert_tf.layers`, `bert_tf.models`) uses keras.ops only and runs on every
Keras backend; TensorFlow-specific parts (checkpoints, tf.data, tensorflow-text, SavedModel
export) live in their own modules and are imported explicitly.

Importing the package registers every layer, model and optimizer for Keras serialization, so
`keras.saving.load_model("model.keras")` works after `import bert_tf` alone, on any backend:
Keras finds a registered class by name only once the module defining it has run. The in-graph
preprocessing layers (TensorFlow + tensorflow-text) are registered on the TensorFlow backend,
where they can run; on the others importing them would load TensorFlow for nothing.
"""

import keras

from bert_tf import layers, models, training  # noqa: F401 - registers them with Keras
from bert_tf.config import BertConfig
from bert_tf.models import (
    BertClassifier,
    BertEncoder,
    BertFeatureTagger,
    BertMultipleChoice,
    BertPretrainer,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)

if keras.backend.backend() == "tensorflow":
    from bert_tf import preprocessing  # noqa: F401 - registers BertTokenizer, BertPackInputs, ...

__version__ = "0.2.0"
__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertFeatureTagger",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertSentenceEmbedder",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "__version__",
    "fine_tune",
]


def fine_tune(settings):
    """Fine-tunes, evaluates and predicts as a task's settings say: one run, or a search.

    It runs what the task's script runs, with the same checks, files and guarantees:
    `bert_tf.tasks.driver.fine_tune`.

    Args:
        settings: A task's settings, `bert_tf.tasks.<kind>.Settings` (classifier, squad, ner,
            swag, embedder).

    Returns:
        A `bert_tf.tasks.driver.FineTuningResult`: the dev figures, the run folder and, for a
        search, the chosen run.

    Raises:
        bert_tf.errors.SettingError: A setting that cannot be used, before any work.
        bert_tf.training.divergence.Diverged: The model's loss or outputs were NaN or Inf.
    """
    from bert_tf.tasks import driver

    return driver.fine_tune(settings)
