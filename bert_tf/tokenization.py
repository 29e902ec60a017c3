"""WordPiece tokenization with the original release's rules, in plain Python.

Same names and behaviour as the original `tokenization.py`: `FullTokenizer` = `BasicTokenizer`
(cleaning, CJK spacing, optional lower-casing + accent stripping, punctuation split) followed by
`WordpieceTokenizer` (greedy longest-match-first with `##` continuations).
"""

import collections
import os
import re
import unicodedata
import warnings

__all__ = [
    "BasicTokenizer", "FullTokenizer", "WordpieceTokenizer", "check_vocab", "convert_by_vocab", "convert_to_unicode",
    "load_vocab", "printable_text", "validate_case_matches_checkpoint", "vocab_from_tokens", "whitespace_tokenize",
]

# Code-point blocks the original treats as CJK ideographs (spaced out as single "words").
# Hangul and kana are deliberately absent, as in the original.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def convert_to_unicode(text):
    """Returns `text` as a str.

    A str stays as it is; bytes are decoded as UTF-8, and undecodable bytes become U+FFFD (which
    the tokenizers' cleaning later drops).

    Args:
        text: A str or bytes.

    Returns:
        The str.

    Raises:
        TypeError: `text` is neither str nor bytes.
    """
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "replace")
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def vocab_from_tokens(tokens, source="<vocabulary>"):
    """Makes the vocab (token -> id) of a token list, where a token's id is its position.

    Args:
        tokens: The tokens, in id order.
        source: What the tokens were read from (a vocab.txt path), for the error messages.

    Returns:
        An `OrderedDict` of token -> int id, in id order.

    Raises:
        ValueError: A token appears twice (the message names both of its lines, id + 1), or
            `tokens` is empty.
    """
    vocab = collections.OrderedDict()
    for index, token in enumerate(tokens):
        if token in vocab:
            raise ValueError(
                f"vocab {source!r} has token {token!r} twice (lines {vocab[token] + 1} and {index + 1})"
            )
        vocab[token] = index
    if not vocab:
        raise ValueError(f"vocab {source!r} is empty")
    return vocab


def printable_text(text):
    """Returns text for logging: a str as it is, bytes decoded (the original's Python 2/3 helper).

    Args:
        text: A str or bytes (decoded as `convert_to_unicode` does).

    Returns:
        The str.
    """
    return convert_to_unicode(text)


def load_vocab(vocab_file):
    """Reads a vocab.txt into an ordered dict (token -> id).

    The file holds one token per line; a token's id is its line's number counted from 0. Each line
    is decoded as `convert_to_unicode` does and stripped of surrounding whitespace.

    Args:
        vocab_file: The path of the vocab.txt.

    Returns:
        An `OrderedDict` of token -> int id, in id order.

    Raises:
        FileNotFoundError: `vocab_file` is not a file.
        ValueError: The file is empty or holds a token twice (`vocab_from_tokens`).
    """
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"vocab file {vocab_file!r} does not exist")
    with open(vocab_file, "rb") as reader:
        return vocab_from_tokens([convert_to_unicode(raw).strip() for raw in reader], vocab_file)


def check_vocab(vocab, source="<vocabulary>"):
    """Checks that a vocab can be used by the tokenizers and for BERT's inputs.

    [UNK] must exist, as WordPiece emits it. Without [CLS] or [SEP] nothing can be packed for BERT;
    their absence is a warning only, since the vocab can still tokenize.

    Args:
        vocab: The vocab, a mapping (or any container) of tokens.
        source: What the vocab was read from (a vocab.txt path), for the messages.

    Raises:
        ValueError: The vocab has no "[UNK]".
    """
    if "[UNK]" not in vocab:
        raise ValueError(f"vocab {source!r} has no '[UNK]' token, which WordPiece emits for unknown words")
    missing = [t for t in ("[CLS]", "[SEP]") if t not in vocab]
    if missing:
        warnings.warn(
            f"vocab {source!r} has no {' or '.join(missing)}: inputs cannot be packed for BERT with it",
            stacklevel=3,
        )


def convert_by_vocab(vocab, items):
    """Maps each item through `vocab`: tokens to ids, or ids to tokens with the inverse vocab.

    Args:
        vocab: A dict (token -> id, or id -> token).
        items: The keys to look up, in order.

    Returns:
        A list of `vocab[item]`, one per item.

    Raises:
        KeyError: An item is not in `vocab`.
    """
    return [vocab[item] for item in items]


def whitespace_tokenize(text):
    """Strips `text` and splits it on runs of whitespace.

    Args:
        text: A str.

    Returns:
        The list of the words between whitespace (none for blank text).
    """
    return text.split()


def _is_whitespace(char):
    # \t, \n and \r are Cc but count as whitespace.
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    cp = ord(char)
    # Every non-alphanumeric ASCII character counts, even those Unicode does not call P*
    # ("^", "$", "`", ...).
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


class BasicTokenizer:
    """Cleans text, spaces out CJK, optionally lower-cases and strips accents, splits punctuation.

    The original release's BasicTokenizer: control characters, NUL and U+FFFD are dropped and
    every whitespace character becomes a space; each CJK ideograph becomes a word of its own;
    every punctuation character (every non-alphanumeric printable ASCII character included)
    becomes a token of its own.

    Args:
        do_lower_case: Whether to lower-case, NFD-normalise and strip accents (marks of category Mn),
            as the original's uncased models.
        never_split: Words (e.g. "[CLS]", "[MASK]") kept whole, neither lower-cased nor split,
            when they stand between whitespace in the text. None (the default): none, as in the
            original.
    """

    def __init__(self, do_lower_case=True, never_split=None):
        self.do_lower_case = do_lower_case
        self.never_split = frozenset(never_split or ())

    def tokenize(self, text):
        """Splits `text` into the original's words and punctuation tokens.

        Args:
            text: A str, or UTF-8 bytes (undecodable bytes are dropped).

        Returns:
            The list of tokens (str).
        """
        text = self._clean_text(convert_to_unicode(text))
        text = self._tokenize_chinese_chars(text)
        split_tokens = []
        for token in whitespace_tokenize(text):
            if token in self.never_split:
                split_tokens.append(token)
                continue
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return whitespace_tokenize(" ".join(split_tokens))

    @staticmethod
    def _run_strip_accents(text):
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _run_split_on_punc(text):
        """Every punctuation character becomes a token of its own."""
        pieces, current = [], []
        for char in text:
            if _is_punctuation(char):
                if current:
                    pieces.append("".join(current))
                    current = []
                pieces.append(char)
            else:
                current.append(char)
        if current:
            pieces.append("".join(current))
        return pieces

    @staticmethod
    def _tokenize_chinese_chars(text):
        return "".join(f" {c} " if _is_chinese_char(ord(c)) else c for c in text)

    @staticmethod
    def _clean_text(text):
        """Drops NUL, U+FFFD and control characters; maps every whitespace character to " "."""
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over already basic-tokenized text.

    A word is split into the longest vocab token that starts it, then the longest `##`
    continuation that starts the rest, and so on. A word that cannot be covered this way, or is
    longer than `max_input_chars_per_word`, becomes a single `unk_token`.

    Args:
        vocab: The vocab: a dict, or any container of tokens.
        unk_token: The token for a word that cannot be split.
        max_input_chars_per_word: The longest word split, in characters.
    """

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
        """Splits each whitespace-separated word of `text` into word pieces.

        Args:
            text: Basic-tokenized text, a str or UTF-8 bytes.

        Returns:
            The list of word pieces (str), continuations prefixed with "##".
        """
        output = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            output.extend(self._word_pieces(token))
        return output

    def _word_pieces(self, word):
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            else:  # no prefix of the rest is in the vocab: the whole word is unknown
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces


class FullTokenizer:
    """Basic tokenization followed by WordPiece, with a vocab loaded from `vocab_file`.

    Args:
        vocab_file: The path of a vocab.txt (`load_vocab`).
        do_lower_case: Whether to lower-case and strip accents (`BasicTokenizer`).
        never_split: Words kept whole by the basic tokenization (`BasicTokenizer`); None: none.

    Raises:
        FileNotFoundError: `vocab_file` is not a file.
        ValueError: The vocab is empty, holds a token twice or has no "[UNK]" (`check_vocab`).
    """

    def __init__(self, vocab_file, do_lower_case=True, never_split=None):
        self.vocab = load_vocab(vocab_file)
        check_vocab(self.vocab, vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case, never_split=never_split)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        """Splits `text` into word pieces: `BasicTokenizer`, then `WordpieceTokenizer` on each word.

        Args:
            text: A str, or UTF-8 bytes.

        Returns:
            The list of word pieces (str).
        """
        return [
            piece
            for token in self.basic_tokenizer.tokenize(text)
            for piece in self.wordpiece_tokenizer.tokenize(token)
        ]

    def convert_tokens_to_ids(self, tokens):
        """Maps tokens to their vocab ids.

        Args:
            tokens: Tokens of the vocab.

        Returns:
            The list of int ids.

        Raises:
            KeyError: A token is not in the vocab.
        """
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        """Maps vocab ids to their tokens.

        Args:
            ids: Ids of the vocab.

        Returns:
            The list of tokens (str).

        Raises:
            KeyError: An id is not in the vocab.
        """
        return convert_by_vocab(self.inv_vocab, ids)


# Google's released checkpoints, by casing (the folder name before /bert_model.ckpt).
_UNCASED_MODELS = (
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
)
_CASED_MODELS = ("cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16", "multi_cased_L-12_H-768_A-12")


def _checkpoint_casing(model_name):
    if model_name in _UNCASED_MODELS or re.match(r"^(wwm_)?uncased_L-\d+_H-\d+_A-\d+$", model_name):
        return True
    if model_name in _CASED_MODELS or re.match(r"^(wwm_|multi_)?cased_L-\d+_H-\d+_A-\d+$", model_name):
        return False
    return None


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises if `do_lower_case` contradicts a released checkpoint's name, as the original does.

    The model's name is the folder before `/bert_model.ckpt` in `init_checkpoint`. Recognises the
    original's list plus the later releases named the same way (whole-word-masking `wwm_*` and the
    small `uncased_L-{2..12}_H-*` models). Unknown names, and paths without a `NAME/bert_model.ckpt`
    part, pass.

    Args:
        do_lower_case: Whether the inputs are lower-cased.
        init_checkpoint: The checkpoint's path, or None or "" for none (which passes).

    Raises:
        ValueError: The name is a released uncased model's and `do_lower_case` is false, or a
            cased model's and it is true; the message is the original's.
    """
    if not init_checkpoint:
        return
    match = re.match(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt", init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)
    lower = _checkpoint_casing(model_name)
    if lower is None or lower == bool(do_lower_case):
        return
    flag, opposite = ("False", "True") if lower else ("True", "False")
    kind = "lowercased" if lower else "cased"
    raise ValueError(
        f"You passed in `--do_lower_case={flag}` with `--init_checkpoint={init_checkpoint}`. "
        f"However, `{model_name}` seems to be a {kind} model, so you should pass in "
        f"`--do_lower_case={opposite}` so that the fine-tuning matches how the model was "
        "pre-trained. If this error is wrong, please just comment out this check."
    )
