"""Learn a WordPiece vocab.txt from a text corpus, with the tokenizer's normalisation.

    python run_scripts/learn_vocab.py --input_file=corpus/*.txt --vocab_size=30522 \
      --do_lower_case=True --num_unused_tokens=994 --output_file=vocab.txt

The output has the original's layout: [PAD] = 0, [unused0..98], [UNK] [CLS] [SEP] [MASK]
(= 100..103 with 99 or more unused slots), the remaining [unusedN], then the learned pieces
(single characters first, then pieces by frequency). `--vocab_size` is an upper bound: the
learner stops within `--slack_ratio` below it. Bad paths and flags are errors before any work;
the vocab is written under a temporary name and renamed when complete.
"""

import time

from absl import app, flags, logging

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.io_utils import check_distinct_outputs, check_output_file, expand_patterns
from bert_tf.preprocessing import vocab_learning
from run_scripts.flag_settings import fail

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None, "Text files: comma-separated list of files or glob patterns.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
flags.DEFINE_integer("vocab_size", 30522, "Largest vocabulary size, reserved tokens included.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents, as an uncased model.")
flags.DEFINE_integer("num_unused_tokens", 0, "[unusedN] slots to reserve (the originals have 994).")
flags.DEFINE_integer("lower_thresh", 10, "Lowest piece count the learner's threshold search tries.")
flags.DEFINE_integer("upper_thresh", 10_000_000, "Highest piece count the threshold search tries.")
flags.DEFINE_integer("num_iterations", 4, "Learner iterations.")
flags.DEFINE_integer("max_unique_chars", 1000, "Alphabet size: rarer characters are left out.")
flags.DEFINE_integer("max_token_length", 50, "Longest piece, in characters.")
flags.DEFINE_float("slack_ratio", 0.05, "Accept a vocabulary this fraction below vocab_size.")

for _name in ("input_file", "output_file"):
    flags.mark_flag_as_required(_name)


def main(argv):
    del argv
    if FLAGS.num_unused_tokens < 0:
        fail(f"--num_unused_tokens={FLAGS.num_unused_tokens} must not be negative")
    reserved = len(vocab_learning.reserved_tokens(FLAGS.num_unused_tokens))
    if FLAGS.vocab_size <= reserved:
        fail(
            f"--vocab_size={FLAGS.vocab_size} leaves no room after {reserved} reserved tokens "
            f"(--num_unused_tokens={FLAGS.num_unused_tokens})"
        )
    try:
        check_output_file(FLAGS.output_file)
        files = expand_patterns(FLAGS.input_file)
        check_distinct_outputs([FLAGS.output_file], [("input_file", f) for f in files])
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))
    start = time.time()
    counts = vocab_learning.count_words(files, do_lower_case=FLAGS.do_lower_case)
    logging.info("Counted %d distinct words (%d in all) in %d file(s) in %.1f s",
                 len(counts), sum(counts.values()), len(files), time.time() - start)
    if not counts:
        fail(f"--input_file={FLAGS.input_file} has no words")
    try:
        vocab = vocab_learning.learn_vocabulary(
            counts,
            FLAGS.vocab_size,
            num_unused=FLAGS.num_unused_tokens,
            lower_thresh=FLAGS.lower_thresh,
            upper_thresh=FLAGS.upper_thresh,
            num_iterations=FLAGS.num_iterations,
            max_unique_chars=FLAGS.max_unique_chars,
            max_token_length=FLAGS.max_token_length,
            slack_ratio=FLAGS.slack_ratio,
        )
    except ValueError as e:
        fail(str(e))
    try:
        vocab_learning.write_vocab(vocab, FLAGS.output_file)
    except OSError as e:  # e.g. a full disk: the partial file is removed
        fail(f"writing --output_file={FLAGS.output_file} failed: {e.strerror or e}")
    logging.info("Wrote %d tokens to %s in %.1f s", len(vocab), FLAGS.output_file, time.time() - start)


if __name__ == "__main__":
    app.run(main)
