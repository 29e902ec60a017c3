"""Learn a WordPiece vocab.txt from a text corpus, with the tokenizer's normalisation.

    python run_scripts/learn_vocab.py --input_file=corpus/*.txt --vocab_size=30522 \
      --do_lower_case=True --num_unused_tokens=994 --output_file=vocab.txt

The output has the original's layout: [PAD] = 0, [unused0..98], [UNK] [CLS] [SEP] [MASK]
(= 100..103 with 99 or more unused slots), the remaining [unusedN], then the learned pieces
(single characters first, then pieces by frequency). `--vocab_size` is an upper bound: the
learner stops within `--slack_ratio` below it. Bad paths and flags are errors before any work;
the vocab is written under a temporary name and renamed when complete.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.preprocessing.learn_vocab import Settings
from run_scripts import settings_flags
from run_scripts.flag_settings import at_the_edge

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    from bert_tf.preprocessing.learn_vocab import learn_vocab

    at_the_edge(lambda: learn_vocab(settings_flags.settings_from_flags(Settings)))


if __name__ == "__main__":
    app.run(main)
