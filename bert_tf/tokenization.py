"""WordPiece tokenization with the original release's rules, in plain Python.

Same names and behaviour as the original `tokenization.py`: `FullTokenizer` = `BasicTokenizer`
(cleaning, CJK spacing, optional lower-casing + accent stripping, punctuation split) followed by
`WordpieceTokenizer` (greedy longest-match-first with `##` continuations).
"""

import collections
import os
import unicodedata

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
    """str stays; bytes are decoded as UTF-8, undecodable bytes become U+FFFD (later dropped)."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "replace")
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def load_vocab(vocab_file):
    """Reads a vocab.txt (one token per line, id = line number) into an ordered dict."""
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"vocab file {vocab_file!r} does not exist")
    vocab = collections.OrderedDict()
    with open(vocab_file, "rb") as reader:
        for index, raw in enumerate(reader):
            token = convert_to_unicode(raw).strip()
            if token in vocab:
                raise ValueError(
                    f"vocab file {vocab_file!r} has token {token!r} twice "
                    f"(lines {vocab[token] + 1} and {index + 1})"
                )
            vocab[token] = index
    if not vocab:
        raise ValueError(f"vocab file {vocab_file!r} is empty")
    return vocab


def convert_by_vocab(vocab, items):
    return [vocab[item] for item in items]


def whitespace_tokenize(text):
    """Strips and splits on runs of whitespace."""
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
    """Cleans text, spaces out CJK, optionally lower-cases and strips accents, splits punctuation."""

    def __init__(self, do_lower_case=True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text):
        text = self._clean_text(convert_to_unicode(text))
        text = self._tokenize_chinese_chars(text)
        split_tokens = []
        for token in whitespace_tokenize(text):
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
    """Greedy longest-match-first WordPiece over already basic-tokenized text."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text):
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
    """Basic tokenization followed by WordPiece, with a vocab loaded from `vocab_file`."""

    def __init__(self, vocab_file, do_lower_case=True):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        return [
            piece
            for token in self.basic_tokenizer.tokenize(text)
            for piece in self.wordpiece_tokenizer.tokenize(token)
        ]

    def convert_tokens_to_ids(self, tokens):
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        return convert_by_vocab(self.inv_vocab, ids)
