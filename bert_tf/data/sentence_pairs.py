"""Packing one or two WordPiece sequences into fixed-length encoder inputs, as the original's
fine-tuning and feature-extraction scripts do (one copy here instead of one per script)."""

import dataclasses


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates in place, one token at a time from the end of the longer list (ties: B).

    The original's heuristic: a short segment loses nothing until it is the longer one.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


@dataclasses.dataclass
class PackedInput:
    """One example as the encoder takes it, zero-padded to `seq_length`."""

    tokens: list  # the real tokens, [CLS] ... [SEP] (... [SEP]), without padding
    input_word_ids: list
    input_mask: list
    input_type_ids: list


def pack_tokens(tokens_a, tokens_b, seq_length, tokenizer):
    """[CLS] A [SEP] (B [SEP]), type ids 0 for A's part and 1 for B's, padded with id 0.

    `tokens_b` may be None or empty (a single segment). Truncates copies of the inputs to fit:
    A alone to seq_length - 2; a pair with `truncate_seq_pair` to seq_length - 3.
    """
    tokens_a = list(tokens_a)
    tokens_b = list(tokens_b) if tokens_b else []
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, seq_length - 3)
    else:
        tokens_a = tokens_a[: seq_length - 2]
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    type_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        type_ids += [1] * (len(tokens_b) + 1)
    ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = [0] * (seq_length - len(ids))
    return PackedInput(
        tokens=tokens,
        input_word_ids=ids + padding,
        input_mask=[1] * len(ids) + padding,
        input_type_ids=type_ids + padding,
    )
