"""run_squad.py's settings: reading comprehension (SQuAD v1.1 and v2.0)."""

from bert_tf.fields import SEARCH, like, setting, settings_class
from bert_tf.tasks.settings import FineTuningSettings, RunSettings, Tfds

__all__ = ["Settings"]


@settings_class
class Settings(FineTuningSettings, Tfds):
    """Fine-tuning BERT for SQuAD, with the original run_squad.py's flags and defaults."""

    kind = "squad"

    max_seq_length: int = like(RunSettings, "max_seq_length", default=384)
    do_predict: bool = like(RunSettings, "do_predict", help_text="Whether to run eval on the dev set.")
    predict_batch_size: int = like(RunSettings, "predict_batch_size", help_text="Total batch size for predictions.")
    train_file: str = setting(None, "SQuAD json for training. E.g., train-v1.1.json", kind=str, shared=SEARCH,
                              path=True, order=4.1)
    predict_file: str = setting(None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json", kind=str,
                                shared=SEARCH, path=True, order=4.2)
    tfds_name: str = like(Tfds, "tfds_name", help_text="Read SQuAD through tensorflow-datasets: squad/v1.1 or "
                          "squad/v2.0.")
    doc_stride: int = setting(128, "When splitting up a long document into chunks, how much stride to take between "
                              "chunks.", shared=SEARCH, order=20)
    max_query_length: int = setting(64, "The maximum number of tokens for the question. Longer questions are "
                                    "truncated.", shared=SEARCH, order=21)
    n_best_size: int = setting(20, "The total number of n-best predictions to generate in the nbest_predictions.json "
                               "output file.")
    max_answer_length: int = setting(30, "The maximum length of an answer that can be generated.")
    verbose_logging: bool = setting(False, "Print all warnings related to data processing.")
    version_2_with_negative: bool = setting(False, "If true, the SQuAD examples contain some that do not have an "
                                            "answer.", shared=SEARCH, order=22)
    null_score_diff_threshold: float = setting(0.0, "If null_score - best_non_null is greater than the threshold "
                                               "predict null.")
