"""Fine-tune BERT as a sentence encoder: one vector per text, for search, clustering and
deduplication, trained with in-batch negatives as sentence-transformers' MultipleNegativesRankingLoss.

    python run_scripts/run_sentence_embedding.py \
      --do_train=true --do_eval=true --do_predict=true --data_dir=$PAIRS_DIR \
      --init_checkpoint=$MODEL_DIR --max_seq_length=128 --pooling=mean --normalize=true \
      --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=1 --output_dir=/tmp/embedder/

--data_dir holds train.tsv (a header `anchor<TAB>positive[<TAB>negative]`), dev.tsv (the same
layout: each anchor retrieves among all positives of the file; or `sentence1<TAB>sentence2<TAB>score`:
the rank correlation of cosine similarity with the score) and test.tsv (a `text` column).
--init_checkpoint: a Google checkpoint, a Hugging Face folder, one of our runs, or a
sentence-transformers folder (its pooling, normalization and max length are used; flags given
anyway must agree). Outputs: eval_results.txt (recall_at_1, recall_at_10, mrr_at_10, eval_loss,
or spearman and pearson) and, with --do_predict, test_embeddings.npy (one row per text of
test.tsv) and test_texts.txt. Started again with the same command, a run resumes from the latest
checkpoint in --output_dir; lists in --learning_rate, ... make a search, chosen by the dev figure.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.layers.sentence_pooling import POOLING_MODES
from bert_tf.models.bert_sentence_embedder import SIMILARITY_SCALE
from run_scripts import common_flags, fine_tuning

FLAGS = flags.FLAGS

common_flags.define_fine_tuning_flags("The input data dir: train.tsv, dev.tsv and test.tsv (see above).")
common_flags.define_padding_flags()
flags.DEFINE_enum("pooling", None, list(POOLING_MODES), "How a text's token vectors become one: the mean of the "
                  "real tokens' (default; a sentence-transformers folder's own when given as --init_checkpoint), "
                  "[CLS]'s, their maximum, or their sum over the square root of their count.")
flags.DEFINE_bool("normalize", False, "L2-normalize each embedding (sentence-transformers' Normalize module).")
flags.DEFINE_float("similarity_scale", SIMILARITY_SCALE, "The contrastive loss's scale of cosine similarities "
                   "(sentence-transformers' MultipleNegativesRankingLoss: 20).")


def main(argv):
    del argv
    fine_tuning.main(FLAGS, "embedder")  # one run, or a search: the lists of --learning_rate, ...


if __name__ == "__main__":
    app.run(main)
