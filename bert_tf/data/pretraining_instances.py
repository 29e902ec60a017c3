"""Masked-LM / next-sentence training instances from documents, with the rules of the original
`create_pretraining_data.py` (pure Python + numpy; no TensorFlow).

Documents are lists of sentences; sentences are int arrays of WordPiece ids. The structural
decisions (document order, target lengths, the A/B split, random next sentences, truncation)
follow the original step by step with a `random.Random`; masking is vectorised with a numpy
Generator and draws from the same distributions as the original's per-token loop.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """What masking needs to know about the vocabulary and the flags."""

    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    # Whole-word masking: bool `[vocab_size]`, True for "##" continuation pieces; None = off.
    is_continuation: np.ndarray | None = None


def truncate_seq_pair(len_a, len_b, max_num_tokens, rng):
    """The original's pre-training truncation: while too long, remove one token from the longer
    segment (B on ties), from its front or its back with equal probability.

    Returns the kept ranges `(a_start, a_end, b_start, b_end)`.
    """
    a0, a1, b0, b1 = 0, len_a, 0, len_b
    while (a1 - a0) + (b1 - b0) > max_num_tokens:
        front = rng.random() < 0.5
        if a1 - a0 > b1 - b0:
            a0, a1 = (a0 + 1, a1) if front else (a0, a1 - 1)
        else:
            b0, b1 = (b0 + 1, b1) if front else (b0, b1 - 1)
    return a0, a1, b0, b1


def _join(sentences):
    return sentences[0] if len(sentences) == 1 else np.concatenate(sentences)


def pack_instances(instances, max_seq_length, cls_id, sep_id):
    """Lays instances out as zero-padded `[n, max_seq_length]` int32 ids and segment ids
    ([CLS] A [SEP] -> 0, B [SEP] -> 1), plus lengths `[n]` and next-sentence labels `[n, 1]`."""
    n = len(instances)
    len_a = np.fromiter((len(a) for a, _, _ in instances), np.int64, n)
    len_b = np.fromiter((len(b) for _, b, _ in instances), np.int64, n)
    labels = np.fromiter((r for _, _, r in instances), np.int64, n)[:, None]
    lengths = len_a + len_b + 3
    columns = np.arange(max_seq_length)[None, :]
    real = columns < lengths[:, None]
    cls, sep = np.array([cls_id], np.int32), np.array([sep_id], np.int32)
    ids = np.zeros((n, max_seq_length), np.int32)
    if n:
        ids[real] = np.concatenate([p for a, b, _ in instances for p in (cls, a, sep, b, sep)])
    segment_ids = (real & (columns >= len_a[:, None] + 2)).astype(np.int32)
    return ids, segment_ids, lengths, labels


def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob, rng):
    """The original `create_instances_from_document`, without the masking.

    Returns a list of `(tokens_a, tokens_b, is_random_next)`, the instance being
    [CLS] A [SEP] B [SEP] (`pack_instances` lays them out).
    """
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3  # [CLS], [SEP], [SEP]
    # Usually fill the sequence; sometimes (short_seq_prob) aim shorter, to match fine-tuning.
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances = []
    current_chunk, current_length = [], 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            # A takes the first a_end sentences of the chunk, at a random sentence boundary.
            a_end = 1
            if len(current_chunk) >= 2:
                a_end = rng.randint(1, len(current_chunk) - 1)
            tokens_a = _join(current_chunk[:a_end])

            if len(current_chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                # Another document (10 tries, as the original; a one-document corpus keeps it).
                for _ in range(10):
                    random_document_index = rng.randint(0, len(all_documents) - 1)
                    if random_document_index != document_index:
                        break
                random_document = all_documents[random_document_index]
                random_start = rng.randint(0, len(random_document) - 1)
                pieces, length = [], 0
                for j in range(random_start, len(random_document)):
                    pieces.append(random_document[j])
                    length += len(random_document[j])
                    if length >= target_b_length:
                        break
                tokens_b = _join(pieces)
                # The chunk's sentences after A were not used: put them back.
                i -= len(current_chunk) - a_end
            else:
                is_random_next = False
                tokens_b = _join(current_chunk[a_end:])

            a0, a1, b0, b1 = truncate_seq_pair(len(tokens_a), len(tokens_b), max_num_tokens, rng)
            assert a1 > a0 and b1 > b0
            instances.append((tokens_a[a0:a1], tokens_b[b0:b1], is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def create_instances(documents, max_seq_length, short_seq_prob, dupe_factor, rng):
    """The original `create_training_instances` after tokenization: shuffle the documents, make
    `dupe_factor` passes over them, shuffle the instances. Empty documents are dropped first."""
    documents = [d for d in documents if d]
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            instances.extend(
                create_instances_from_document(documents, document_index, max_seq_length, short_seq_prob, rng)
            )
    rng.shuffle(instances)
    return instances


def num_to_predict(lengths, masked_lm_prob, max_predictions_per_seq):
    """min(max_predictions, max(1, round(len * prob))), with Python's round (half to even)."""
    return np.minimum(max_predictions_per_seq, np.maximum(1, np.rint(np.asarray(lengths) * masked_lm_prob))).astype(np.int64)


def _replacements(original, config, rng):
    """80% [MASK], 10% unchanged, 10% a uniformly random vocab id (any id, as the original)."""
    u = rng.random(original.shape)
    random_ids = rng.integers(0, config.vocab_size, size=original.shape)
    return np.where(u < 0.8, config.mask_id, np.where(u < 0.9, original, random_ids))


def mask_instances(input_ids, lengths, config, rng):
    """Masks a batch of instances as the original `create_masked_lm_predictions`.

    input_ids: int `[n, seq]`, zero-padded; lengths: `[n]`. Returns (masked input_ids, positions,
    label ids, weights), the last three `[n, max_predictions_per_seq]`, zero-padded, positions
    ascending. [CLS]/[SEP] are never chosen; with `config.is_continuation`, whole words.
    """
    n, seq = input_ids.shape
    P = config.max_predictions_per_seq
    k = num_to_predict(lengths, config.masked_lm_prob, P)
    real = np.arange(seq)[None, :] < np.asarray(lengths)[:, None]
    candidate = real & (input_ids != config.cls_id) & (input_ids != config.sep_id)

    if config.is_continuation is None:
        # The original shuffles the candidates and takes the first k: a uniform subset, here
        # the k smallest of random keys (candidates only).
        keys = np.where(candidate, rng.random((n, seq)), 2.0)
        width = min(P, seq)
        chosen = np.argpartition(keys, width - 1, axis=1)[:, :width] if width < seq else np.tile(np.arange(seq), (n, 1))
        order = np.argsort(np.take_along_axis(keys, chosen, axis=1), axis=1)
        chosen = np.take_along_axis(chosen, order, axis=1)  # ascending keys
        if width < P:
            chosen = np.pad(chosen, ((0, 0), (0, P - width)))
        count = np.minimum(k, candidate.sum(axis=1))
    else:
        chosen, count = _whole_word_choices(input_ids, candidate, k, config, rng)
    valid = np.arange(P)[None, :] < count[:, None]
    positions = np.sort(np.where(valid, chosen, seq), axis=1)  # ascending, padding last
    valid = positions < seq
    positions = np.where(valid, positions, 0)
    labels = np.where(valid, np.take_along_axis(input_ids, positions, axis=1), 0)

    masked = input_ids.copy()
    rows = np.nonzero(valid)
    masked[rows[0], positions[rows]] = _replacements(labels[rows], config, rng)
    return masked, positions.astype(np.int32), labels.astype(np.int32), valid.astype(np.float32)


def _whole_word_choices(input_ids, candidate, k, config, rng):
    """Per instance, the original's whole-word loop: candidates grouped with the "##" pieces
    that follow them (in candidate order, skipping [CLS]/[SEP]), groups shuffled, each taken
    whole if it still fits under num_to_predict."""
    n = input_ids.shape[0]
    P = config.max_predictions_per_seq
    chosen = np.zeros((n, P), np.int64)
    count = np.zeros(n, np.int64)
    for row in range(n):
        index = np.nonzero(candidate[row])[0]
        if len(index) == 0:
            continue
        starts = ~config.is_continuation[input_ids[row, index]]
        starts[0] = True
        groups = np.split(index, np.nonzero(starts)[0][1:])
        taken = []
        for g in rng.permutation(len(groups)):
            if len(taken) >= k[row]:
                break
            if len(taken) + len(groups[g]) > k[row]:
                continue
            taken.extend(groups[g].tolist())
        chosen[row, : len(taken)] = taken
        count[row] = len(taken)
    return chosen, count
