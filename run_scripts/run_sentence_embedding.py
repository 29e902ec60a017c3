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
from bert_tf.tasks.embedder import Settings
from run_scripts import fine_tuning, settings_flags

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    fine_tuning.main(settings_flags.settings_from_flags(Settings))  # one run, or a search


if __name__ == "__main__":
    app.run(main)
