"""run_sentence_embedding.py's settings: a sentence encoder trained with in-batch negatives."""

from bert_tf.fields import SEARCH, like, setting, settings_class
from bert_tf.layers.sentence_pooling import POOLING_MODES
from bert_tf.models.bert_sentence_embedder import SIMILARITY_SCALE
from bert_tf.tasks.settings import DataDir, Evaluation, FineTuningSettings, Windows

__all__ = ["Settings"]


@settings_class
class Settings(FineTuningSettings, Evaluation, DataDir, Windows):
    """Fine-tuning BERT as a sentence encoder: one vector per text."""

    kind = "embedder"

    data_dir: str = like(DataDir, "data_dir",
                         help_text="The input data dir: train.tsv, dev.tsv and test.tsv (see above).")
    pooling: str = setting(
        None, "How a text's token vectors become one: the mean of the real tokens' (default; a sentence-transformers "
        "folder's own when given as --init_checkpoint), [CLS]'s, their maximum, or their sum over the square root "
        "of their count.", kind=str, choices=tuple(POOLING_MODES), shared=SEARCH)
    normalize: bool = setting(False, "L2-normalize each embedding (sentence-transformers' Normalize module).",
                              shared=SEARCH)
    similarity_scale: float = setting(SIMILARITY_SCALE, "The contrastive loss's scale of cosine similarities "
                                      "(sentence-transformers' MultipleNegativesRankingLoss: 20).", shared=SEARCH)
