"""Masked-LM / next-sentence training instances from documents, with the rules of the original
`create_pretraining_data.py` (pure Python + numpy; no TensorFlow), and the paper's ablations of
them: other splits of the chosen tokens (Appendix C.2, Table 8) and single-segment instances for
a masked LM without next-sentence prediction (§5.1's "No NSP").

A shard's WordPiece ids are one flat int array; a document is the list of its sentence
boundaries in it (`[s_0, s_1, ..., s_n]`: sentence j is `tokens[s_j : s_(j+1)]`). Segments A and B are
runs of consecutive sentences, so each is a range `[start, end)` of the flat array and an
instance is four integers and a label. The structural decisions (document order, target
lengths, the A/B split, random next sentences) follow the original step by step with a
`random.Random`; truncation, layout and masking are vectorised with a numpy Generator and draw
from the same distributions as the original's per-token loops.
"""

import dataclasses

import numpy as np

from bert_tf.errors import shown


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
    # What a chosen token becomes (Table 8): [MASK], a random id, or (the rest) itself.
    mask_token_prob: float = 0.8
    random_token_prob: float = 0.1


def check_replacement_split(mask_token_prob, random_token_prob):
    """Raises ValueError unless both shares are in [0, 1] and add up to at most 1 (the rest of
    the chosen tokens keep their id)."""
    for name, share in (("mask_token_prob", mask_token_prob), ("random_token_prob", random_token_prob)):
        if not 0 <= share <= 1:
            raise ValueError(f"{shown(name)}={share} must be in [0, 1]")
    # A tolerance for sums such as 0.7 + 0.3 that round a hair above 1.
    if mask_token_prob + random_token_prob > 1 + 1e-9:
        raise ValueError(
            f"{shown.mask_token_prob}={mask_token_prob} + {shown.random_token_prob}={random_token_prob} = "
            f"{_above_one(mask_token_prob + random_token_prob)} is above 1"
        )


def _above_one(total):
    """`total` (> 1) with the fewest significant digits that still show it above 1: `%g`'s six
    digits print 1.0000001 as 1."""
    for digits in range(6, 18):
        shown = f"{total:.{digits}g}"
        if float(shown) > 1:
            return shown
    return repr(total)


def flatten_documents(documents):
    """Documents as lists of int id arrays (sentences) -> (flat int32 ids, sentence boundaries
    per document). Empty sentences and documents are dropped, as the original's reader does."""
    pieces, bounded, offset = [], [], 0
    for document in documents:
        bounds = [offset]
        for sentence in document:
            if len(sentence):
                pieces.append(np.asarray(sentence, np.int32))
                offset += len(sentence)
                bounds.append(offset)
        if len(bounds) > 1:
            bounded.append(bounds)
    tokens = np.concatenate(pieces) if pieces else np.zeros(0, np.int32)
    return tokens, bounded


def create_instances_from_document(
    documents, document_index, max_seq_length, short_seq_prob, rng, next_sentence=True
):
    """The original `create_instances_from_document`, before truncation and masking.

    documents: lists of sentence boundaries (see the module docstring). Returns a list of
    `(a_start, a_end, b_start, b_end, is_random_next)`, ranges of the flat ids; the instance is
    [CLS] A [SEP] B [SEP] once `truncate_pairs` has cut A + B to max_seq_length - 3.

    With `next_sentence=False`, single segments instead (`single_segment_instances`).
    """
    bounds = documents[document_index]
    num_sentences = len(bounds) - 1
    max_num_tokens = max_seq_length - (3 if next_sentence else 2)  # [CLS], [SEP] (, [SEP])
    # Usually fill the sequence; sometimes (short_seq_prob) aim shorter, to match fine-tuning.
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    if not next_sentence:
        return single_segment_instances(bounds, target_seq_length)

    instances = []
    chunk_start = 0  # the current chunk is sentences chunk_start..i
    i = 0
    while i < num_sentences:
        if i == num_sentences - 1 or bounds[i + 1] - bounds[chunk_start] >= target_seq_length:
            chunk_size = i + 1 - chunk_start
            # A takes the chunk's first a_end sentences, at a random sentence boundary.
            a_end = 1
            if chunk_size >= 2:
                a_end = rng.randint(1, chunk_size - 1)
            a_start, a_stop = bounds[chunk_start], bounds[chunk_start + a_end]

            if chunk_size == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - (a_stop - a_start)
                # Another document (10 tries, as the original; a one-document corpus keeps it).
                for _ in range(10):
                    random_document_index = rng.randint(0, len(documents) - 1)
                    if random_document_index != document_index:
                        break
                other = documents[random_document_index]
                random_start = rng.randint(0, len(other) - 2)
                # Sentences from random_start until B reaches its target or the document ends.
                j = random_start + 1
                while j < len(other) - 1 and other[j] - other[random_start] < target_b_length:
                    j += 1
                b_start, b_stop = other[random_start], other[j]
                # The chunk's sentences after A were not used: put them back.
                i -= chunk_size - a_end
            else:
                is_random_next = False
                b_start, b_stop = a_stop, bounds[i + 1]
            instances.append((a_start, a_stop, b_start, b_stop, is_random_next))
            chunk_start = i + 1
        i += 1
    return instances


def single_segment_instances(bounds, target_seq_length):
    """A document's instances without a next-sentence task: each a run of its consecutive
    sentences, taken as the original takes a chunk (sentences added until the target length is
    reached; `truncate_pairs` cuts an overshoot), laid out [CLS] A [SEP] with segment ids all 0.
    No instance spans two documents (RoBERTa's DOC-SENTENCES), so a document's last one may be
    short. Returns rows as `create_instances_from_document`'s, with B empty and the label 0.
    """
    instances, start = [], 0
    for i in range(len(bounds) - 1):
        if i == len(bounds) - 2 or bounds[i + 1] - bounds[start] >= target_seq_length:
            instances.append((bounds[start], bounds[i + 1], bounds[i + 1], bounds[i + 1], False))
            start = i + 1
    return instances


def create_instances(documents, max_seq_length, short_seq_prob, dupe_factor, rng, next_sentence=True):
    """The original `create_training_instances` after tokenization: shuffle the documents, make
    `dupe_factor` passes over them, shuffle the instances. Returns int64 `[n, 5]` rows of
    `create_instances_from_document` (untruncated; single segments with `next_sentence=False`)."""
    documents = list(documents)
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            instances.extend(
                create_instances_from_document(
                    documents, document_index, max_seq_length, short_seq_prob, rng, next_sentence
                )
            )
    rng.shuffle(instances)
    return np.array(instances, np.int64).reshape(-1, 5)


def truncated_lengths(len_a, len_b, max_num_tokens):
    """Lengths after the original's truncation loop (remove one token from the longer segment,
    from B on ties, until the pair fits): a short segment keeps everything; two long ones end
    at ceil and floor of half the budget, A taking the odd token. (The same rule as
    `preprocessing.bert_pack_inputs.longest_first_lengths`, which works on tensors.)"""
    new_a = np.minimum(len_a, np.maximum(max_num_tokens - len_b, (max_num_tokens + 1) // 2))
    return new_a, np.minimum(len_b, max_num_tokens - new_a)


def truncate_pairs(spans, max_num_tokens, rng):
    """Truncates `create_instances` rows as the original's `truncate_seq_pair`: which segment
    loses each token depends only on the lengths; each removal is from the front or the back
    with probability 1/2, so a segment's front removals are Binomial(removed, 1/2).

    spans: int `[n, 5]`; rng: a numpy Generator. Returns int64 `[n, 4]` ranges
    (a_start, a_end, b_start, b_end).
    """
    a0, a1, b0, b1 = (spans[:, k] for k in range(4))
    new_a, new_b = truncated_lengths(a1 - a0, b1 - b0, max_num_tokens)
    cut_a, cut_b = (a1 - a0) - new_a, (b1 - b0) - new_b
    front_a, front_b = rng.binomial(cut_a, 0.5), rng.binomial(cut_b, 0.5)
    return np.stack([a0 + front_a, a0 + front_a + new_a, b0 + front_b, b0 + front_b + new_b], axis=1)


def _runs(lengths):
    """For runs of `lengths` elements laid end to end: each element's run and its offset in it."""
    run = np.repeat(np.arange(len(lengths)), lengths)
    offset = np.arange(len(run)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return run, offset


def pack_instances(tokens, ranges, max_seq_length, cls_id, sep_id):
    """Lays instances out as zero-padded `[n, max_seq_length]` int32 ids and segment ids
    ([CLS] A [SEP] -> 0, B [SEP] -> 1), plus lengths `[n]`.

    tokens: the flat ids; ranges: int `[n, 4]` (a_start, a_end, b_start, b_end), already fitting
    in max_seq_length - 3; or `[n, 2]` (a_start, a_end), fitting in max_seq_length - 2, for single
    segments [CLS] A [SEP] (segment ids all 0).
    """
    ranges = np.asarray(ranges, np.int64)
    a0, a1 = ranges[:, 0], ranges[:, 1]
    b0, b1 = (ranges[:, 2], ranges[:, 3]) if ranges.shape[1] == 4 else (a1, a1)
    len_a, len_b = a1 - a0, b1 - b0
    lengths = len_a + len_b + (3 if ranges.shape[1] == 4 else 2)
    n = len(lengths)
    ids = np.zeros((n, max_seq_length), np.int32)
    flat = ids.reshape(-1)
    rows = np.arange(n)
    # Copy each segment's tokens (only the real ones, not the padding) to its columns.
    for source, first_column, length in ((a0, 1, len_a), (b0, len_a + 2, len_b)):
        run, offset = _runs(length)
        flat[(rows * max_seq_length + first_column)[run] + offset] = tokens[source[run] + offset]
    ids[:, 0] = cls_id
    ids[rows, len_a + 1] = sep_id
    ids[rows, lengths - 1] = sep_id  # the same [SEP] for a single segment
    column = np.arange(max_seq_length)
    segment_ids = ((column >= (len_a + 2)[:, None]) & (column < lengths[:, None])).astype(np.int32)
    return ids, segment_ids, lengths


def num_to_predict(lengths, masked_lm_prob, max_predictions_per_seq):
    """min(max_predictions, max(1, round(len * prob))), with Python's round (half to even)."""
    return np.minimum(max_predictions_per_seq, np.maximum(1, np.rint(np.asarray(lengths) * masked_lm_prob))).astype(
        np.int64
    )


def _replacements(original, config, rng):
    """[MASK] with mask_token_prob (80% by default), a uniformly random vocab id (any id, as the
    original) with random_token_prob (10%), else unchanged.

    One uniform draw per token: [MASK] below mask_token_prob, a random id from
    1 - random_token_prob up, so the default split cuts at 0.8 and 0.9 exactly as before and
    every split draws the same numbers (only the replacements differ, never the positions).
    """
    u = rng.random(original.shape)
    random_ids = rng.integers(0, config.vocab_size, size=original.shape)
    kept = np.where(u < 1 - config.random_token_prob, original, random_ids)
    return np.where(u < config.mask_token_prob, config.mask_id, kept)


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
