"""run_classifier.py's settings: sentence (pair) classification."""

from bert_tf.fields import SEARCH, like, setting, settings_class
from bert_tf.preprocessing.text_windows import WINDOW_POOLING
from bert_tf.tasks.settings import DataDir, Evaluation, FineTuningSettings, Tfds, Windows, tfds_help

__all__ = ["Settings"]


@settings_class
class Settings(FineTuningSettings, Evaluation, DataDir, Tfds, Windows):
    """Fine-tuning a sentence (pair) classifier: GLUE, XNLI, multi-label and registered tasks."""

    kind = "classifier"

    data_dir: str = like(DataDir, "data_dir", help_text="The input data dir. Should contain the .tsv files (or "
                         "other data files) for the task.")
    task_name: str = setting(None, "The name of the task to train.", kind=str, shared=SEARCH, order=4.5)
    tfds_name: str = like(Tfds, "tfds_name", help_text=tfds_help("glue/mrpc, xnli"))
    xnli_language: str = setting("zh", "xnli: the language trained and evaluated on.", shared=SEARCH, order=4.7)
    labels_file: str = setting(None, "multilabel: the label names, one per line.", kind=str, shared=SEARCH, path=True,
                               order=4.3)
    task_module: str = setting(None, "A Python module to import first; it registers more tasks.", kind=str)
    window_pooling: str = setting("max", "With --max_windows above 1, how the windows' logits become the text's one "
                                  "prediction: their maximum or their mean.", choices=WINDOW_POOLING, shared=SEARCH,
                                  order=19.2)
