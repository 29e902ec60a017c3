"""run_ner.py's settings: named-entity recognition."""

from bert_tf.fields import SEARCH, like, setting, settings_class
from bert_tf.models.bert_feature_tagger import FEATURE_LAYERS, LSTM_UNITS
from bert_tf.tasks.settings import DataDir, Evaluation, FineTuningSettings, Tfds, tfds_help

__all__ = ["Settings"]


@settings_class
class Settings(FineTuningSettings, Evaluation, DataDir, Tfds):
    """Fine-tuning BERT for named-entity recognition (paper §5.3)."""

    kind = "ner"

    data_dir: str = like(DataDir, "data_dir", help_text="The input data dir: train.txt, valid.txt and test.txt in the "
                         "CoNLL-2003 layout.")
    tfds_name: str = like(Tfds, "tfds_name", help_text=tfds_help("conll2003"))
    labels: str = setting(None, "A file of the tags, one per line (default: the tags of the training data).", kind=str,
                          shared=SEARCH, path=True, order=4.4)
    window_context_words: int = setting(
        16, "A sentence longer than max_seq_length is cut into windows: how many preceding words each window after "
        "the first repeats as context (at most half its pieces; they are not tagged again).")
    feature_based: str = setting(
        None, "The feature-based approach (paper §5.3, Table 7): freeze the encoder and train a two-layer BiLSTM and "
        "the tag layer on these layers' activations (default: fine-tune the whole model).", kind=str,
        choices=tuple(FEATURE_LAYERS), shared=SEARCH, order=23)
    lstm_units: int = setting(LSTM_UNITS, "With --feature_based: the width of each BiLSTM direction.", shared=SEARCH,
                              order=24)
