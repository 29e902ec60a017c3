"""Timing reference: the original create_pretraining_data.py's procedure, step for step.

    python bench/original_baseline.py CORPUS VOCAB OUTPUT DUPE_FACTOR
    python bench/original_baseline.py --smoke   # data/corpus.txt once, into a temporary file

What the original release does per corpus, restated for measurement only (the benchmark runs
it beside ours on the same corpus): the Python FullTokenizer on every line, the whole corpus
and every instance held in memory, per-token Python loops for truncation and masking, one
`tf.train.Example` built and serialised per instance, one output file. Prints the instance
count and the seconds spent after imports.
"""

import collections
import os
import random
import sys
import tempfile
import time

import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
sys.path.insert(0, REPO)  # run as `python bench/original_baseline.py`: bert_tf from this checkout

from bert_tf import tokenization  # noqa: E402


def truncate(tokens_a, tokens_b, budget, rng):
    while len(tokens_a) + len(tokens_b) > budget:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def mask(tokens, masked_lm_prob, max_predictions, vocab_words, rng):
    candidates = [i for i, t in enumerate(tokens) if t not in ("[CLS]", "[SEP]")]
    rng.shuffle(candidates)
    output = list(tokens)
    count = min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))
    chosen = sorted(candidates[:count])
    for i in chosen:
        if rng.random() < 0.8:
            output[i] = "[MASK]"
        elif rng.random() >= 0.5:
            output[i] = vocab_words[rng.randint(0, len(vocab_words) - 1)]
    return output, chosen, [tokens[i] for i in chosen]


def instances_from_document(
    documents, index, seq_length, short_seq_prob, masked_lm_prob, max_predictions, vocab_words, rng
):
    document, budget = documents[index], seq_length - 3
    target = rng.randint(2, budget) if rng.random() < short_seq_prob else budget
    made, chunk, length, i = [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            tokens_b = []
            is_random = len(chunk) == 1 or rng.random() < 0.5
            if is_random:
                for _ in range(10):
                    other = rng.randint(0, len(documents) - 1)
                    if other != index:
                        break
                other_document = documents[other]
                for sentence in other_document[rng.randint(0, len(other_document) - 1) :]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target - len(tokens_a):
                        break
                i -= len(chunk) - a_end
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            truncate(tokens_a, tokens_b, budget, rng)
            tokens = ["[CLS]", *tokens_a, "[SEP]", *tokens_b, "[SEP]"]
            segments = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
            made.append((*mask(tokens, masked_lm_prob, max_predictions, vocab_words, rng), segments, is_random))
            chunk, length = [], 0
        i += 1
    return made


def int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def main(
    corpus,
    vocab_file,
    output,
    dupe_factor,
    seq_length=128,
    max_predictions=20,
    masked_lm_prob=0.15,
    short_seq_prob=0.1,
    seed=12345,
):
    start = time.time()
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    documents = [[]]
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                documents.append([])
            elif tokens := tokenizer.tokenize(line):
                documents[-1].append(tokens)
    documents = [d for d in documents if d]
    rng = random.Random(seed)
    rng.shuffle(documents)
    vocab_words = list(tokenizer.vocab)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(
                instances_from_document(
                    documents, index, seq_length, short_seq_prob, masked_lm_prob, max_predictions, vocab_words, rng
                )
            )
    rng.shuffle(instances)
    with tf.io.TFRecordWriter(output) as writer:
        for tokens, positions, labels, segments, is_random in instances:
            ids = tokenizer.convert_tokens_to_ids(tokens)
            pad = seq_length - len(ids)
            label_ids = tokenizer.convert_tokens_to_ids(labels)
            pad_p = max_predictions - len(positions)
            features = collections.OrderedDict(
                input_ids=int_feature(ids + [0] * pad),
                input_mask=int_feature([1] * len(ids) + [0] * pad),
                segment_ids=int_feature(segments + [0] * pad),
                masked_lm_positions=int_feature(positions + [0] * pad_p),
                masked_lm_ids=int_feature(label_ids + [0] * pad_p),
                masked_lm_weights=tf.train.Feature(
                    float_list=tf.train.FloatList(value=[1.0] * len(positions) + [0.0] * pad_p)
                ),
                next_sentence_labels=int_feature([int(is_random)]),
            )
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    print(f"BASELINE instances={len(instances)} own_seconds={time.time() - start:.2f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--smoke"]:
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, "out.tfrecord")
            main(os.path.join(DATA, "corpus.txt"), os.path.join(DATA, "vocab.txt"), output, 1)
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
