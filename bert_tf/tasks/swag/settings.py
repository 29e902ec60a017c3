"""run_swag.py's settings: choosing a sentence's ending among four."""

from bert_tf.fields import like, settings_class
from bert_tf.tasks.settings import DataDir, Evaluation, FineTuningSettings

__all__ = ["Settings"]


@settings_class
class Settings(FineTuningSettings, Evaluation, DataDir):
    """Fine-tuning BERT for SWAG (paper §4.4)."""

    kind = "swag"

    data_dir: str = like(DataDir, "data_dir",
                         help_text="The input data dir: train.csv, val.csv and test.csv of the SWAG release.")
