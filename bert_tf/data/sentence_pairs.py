"""Packing one or two WordPiece sequences into fixed-length encoder inputs, as the original's
fine-tuning and feature-extraction scripts do (one copy here instead of one per script)."""

import dataclasses


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates a pair of token lists in place to at most `max_length` tokens in all.

    Tokens are removed one at a time from the end of the longer list (of two of equal length,
    from B's). The original's heuristic: a short segment loses nothing until it is the longer one.

    Args:
        tokens_a: The first segment's tokens (a list, changed in place).
        tokens_b: The second segment's tokens (a list, changed in place).
        max_length: The most tokens the two may hold together.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()


@dataclasses.dataclass
class PackedInput:
    """One example as the encoder takes it, zero-padded to `seq_length`.

    Args:
        tokens: The real tokens, `[CLS] ... [SEP]` (`... [SEP]`), without padding.
        input_word_ids: The tokens' ids, then 0s: `seq_length` ints.
        input_mask: 1 for each real token, then 0s: `seq_length` ints.
        input_type_ids: 0 for the first segment's part, 1 for the second's, then 0s:
            `seq_length` ints.
    """

    tokens: list
    input_word_ids: list
    input_mask: list
    input_type_ids: list


def pack_tokens(tokens_a, tokens_b, seq_length, tokenizer):
    """Packs one or two token segments as `[CLS] A [SEP] (B [SEP])`, padded to `seq_length`.

    Type ids are 0 for A's part (with `[CLS]` and its `[SEP]`) and 1 for B's; padding has id 0.
    Copies of the inputs are truncated to fit: A alone to `seq_length - 2`, a pair with
    `truncate_seq_pair` to `seq_length - 3`; the inputs are not changed.

    Args:
        tokens_a: The first segment's WordPiece tokens.
        tokens_b: The second segment's tokens; None or empty: a single segment.
        seq_length: The packed length.
        tokenizer: Anything with `convert_tokens_to_ids(tokens)` (a `FullTokenizer`).

    Returns:
        A `PackedInput`.
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
