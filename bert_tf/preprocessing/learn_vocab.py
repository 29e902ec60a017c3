"""learn_vocab.py's library half: `learn_vocab(settings)` learns a WordPiece vocab.txt from text
files, with the tokenizer's normalisation (`bert_tf.preprocessing.vocab_learning` does the work).

The output has the original's layout: [PAD] = 0, [unused0..98], [UNK] [CLS] [SEP] [MASK]
(= 100..103 with 99 or more unused slots), the remaining [unusedN], then the learned pieces
(single characters first, then pieces by frequency). `vocab_size` is an upper bound: the learner
stops within `slack_ratio` below it. Bad paths and settings raise `bert_tf.errors.SettingError`
before any work; the vocab is written under a temporary name and renamed when complete.
"""

import time

from absl import logging

from bert_tf.errors import SettingError, reported
from bert_tf.fields import Settings as _Base
from bert_tf.fields import setting, settings_class
from bert_tf.io_utils import check_distinct_outputs, check_output_file, expand_patterns
from bert_tf.preprocessing import vocab_learning

__all__ = ["Settings", "learn_vocab"]


@settings_class
class Settings(_Base):
    """learn_vocab.py's settings (its flags' names, defaults and help)."""

    input_file: str = setting(None, "Text files: comma-separated list of files or glob patterns.", kind=str,
                              required=True)
    output_file: str = setting(None, "Where to write vocab.txt.", kind=str, required=True)
    vocab_size: int = setting(30522, "Largest vocabulary size, reserved tokens included.")
    do_lower_case: bool = setting(True, "Lower-case and strip accents, as an uncased model.")
    num_unused_tokens: int = setting(0, "[unusedN] slots to reserve (the originals have 994).")
    lower_thresh: int = setting(10, "Lowest piece count the learner's threshold search tries.")
    upper_thresh: int = setting(10_000_000, "Highest piece count the threshold search tries.")
    num_iterations: int = setting(4, "Learner iterations.")
    max_unique_chars: int = setting(1000, "Alphabet size: rarer characters are left out.")
    max_token_length: int = setting(50, "Longest piece, in characters.")
    slack_ratio: float = setting(0.05, "Accept a vocabulary this fraction below vocab_size.")


def _input_files(settings):
    """The input files, after the sizes and the paths are checked (before any work)."""
    s = settings
    if s.num_unused_tokens < 0:
        raise SettingError(f"--num_unused_tokens={s.num_unused_tokens} must not be negative", "num_unused_tokens")
    reserved = len(vocab_learning.reserved_tokens(s.num_unused_tokens))
    if s.vocab_size <= reserved:
        raise SettingError(f"--vocab_size={s.vocab_size} leaves no room after {reserved} reserved tokens "
                           f"(--num_unused_tokens={s.num_unused_tokens})", "vocab_size")
    with reported(setting="output_file"):
        check_output_file(s.output_file)
    with reported(setting="input_file"):
        files = expand_patterns(s.input_file)
    with reported(setting="output_file"):
        check_distinct_outputs([s.output_file], [("input_file", f) for f in files])
    return files


def learn_vocab(settings):
    """Learns a vocabulary from `input_file` and writes it to `output_file`: learn_vocab.py's run.

    Args:
        settings: A `Settings`.

    Returns:
        The vocabulary written: its tokens, in id order.

    Raises:
        SettingError: A setting or path that cannot be used (before any work), input files with
            no words, or a failed write (a full disk: the partial file is removed).
    """
    s = settings
    files = _input_files(s)
    start = time.time()
    counts = vocab_learning.count_words(files, do_lower_case=s.do_lower_case)
    logging.info("Counted %d distinct words (%d in all) in %d file(s) in %.1f s",
                 len(counts), sum(counts.values()), len(files), time.time() - start)
    if not counts:
        raise SettingError(f"--input_file={s.input_file} has no words", "input_file")
    with reported():
        vocab = vocab_learning.learn_vocabulary(
            counts, s.vocab_size, num_unused=s.num_unused_tokens, lower_thresh=s.lower_thresh,
            upper_thresh=s.upper_thresh, num_iterations=s.num_iterations, max_unique_chars=s.max_unique_chars,
            max_token_length=s.max_token_length, slack_ratio=s.slack_ratio,
        )
    try:
        vocab_learning.write_vocab(vocab, s.output_file)
    except OSError as e:  # a full disk, for one: the partial file is removed
        raise SettingError(f"writing --output_file={s.output_file} failed: {e.strerror or e}", "output_file") from e
    logging.info("Wrote %d tokens to %s in %.1f s", len(vocab), s.output_file, time.time() - start)
    return vocab
