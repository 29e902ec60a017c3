"""Learning a WordPiece vocabulary from a corpus, with the tokenizer's own normalisation.

Words are counted with `BertBasicTokenizer` (the original rules, in graph), so the vocabulary
covers exactly the words `FullTokenizer`/`BertTokenizer` will look up; tensorflow-text's
WordPiece learner then picks the pieces.
"""

import collections

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from bert_tf.io_utils import atomic_write
from bert_tf.preprocessing.bert_basic_tokenizer import BertBasicTokenizer

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")
# The original vocab.txt files put 99 [unusedN] slots between [PAD] and [UNK] (so [UNK] = 100,
# [CLS] = 101, [SEP] = 102, [MASK] = 103) and the rest after [MASK].
_UNUSED_BEFORE_SPECIALS = 99


def reserved_tokens(num_unused=0):
    """[PAD] (id 0), up to 99 [unusedN], [UNK] [CLS] [SEP] [MASK], then the other [unusedN]."""
    if isinstance(num_unused, bool) or not isinstance(num_unused, int) or num_unused < 0:
        raise ValueError(f"num_unused_tokens {num_unused!r} must be a non-negative integer")
    unused = [f"[unused{i}]" for i in range(num_unused)]
    head = min(num_unused, _UNUSED_BEFORE_SPECIALS)
    return ["[PAD]", *unused[:head], *SPECIAL_TOKENS, *unused[head:]]


def count_words(text_files, do_lower_case=True, batch_size=1024):
    """Counts the basic-tokenized words of every non-empty line of `text_files`."""
    tokenizer = BertBasicTokenizer(do_lower_case=do_lower_case)
    lines = tf.data.TextLineDataset(list(text_files)).filter(lambda s: tf.strings.length(s) > 0)
    words = lines.batch(batch_size).map(lambda b: tokenizer(b).flat_values, num_parallel_calls=tf.data.AUTOTUNE)
    counts = collections.Counter()
    for batch in words.as_numpy_iterator():
        counts.update(batch.tolist())
    return collections.Counter({w.decode("utf-8"): c for w, c in counts.items()})


def learn_vocabulary(word_counts, vocab_size, num_unused=0, **learner_params):
    """A vocab list of at most `vocab_size` tokens: `reserved_tokens(num_unused)` then pieces.

    `learner_params` go to tensorflow-text's learner (lower_thresh, upper_thresh,
    num_iterations, max_unique_chars, max_token_length, slack_ratio, ...).
    """
    reserved = reserved_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size {vocab_size} leaves no room after {len(reserved)} reserved tokens")
    if not word_counts:
        raise ValueError("no words to learn a vocabulary from (is the corpus empty?)")
    vocab = learner.learn(dict(word_counts), vocab_size, reserved, **learner_params)
    assert vocab[: len(reserved)] == reserved
    return vocab


def write_vocab(vocab, path):
    """Writes vocab.txt (one token per line, the original format), atomically."""
    with atomic_write(path) as f:
        f.write("".join(f"{token}\n" for token in vocab))
