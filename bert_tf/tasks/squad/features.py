"""SQuAD v1.1 / v2.0 pre-processing, rule for rule as the original `run_squad.py`
(`read_squad_examples`, `convert_examples_to_features`), but streaming and fast; the original's
`FeatureWriter` is `bert_tf.tasks.squad.feature_writer`.

Same results as the original with less work: the file is read article by article (`json_reader`);
each paragraph is WordPiece-tokenized once for all its questions, each distinct whitespace word
once while it stays in a bounded cache; max-context flags come from one pass over the spans
instead of a scan of all spans per token. Memory stays flat in the file's size.
"""

import bisect
import dataclasses
import itertools
import re

import numpy as np
from absl import logging

from bert_tf.errors import shown
from bert_tf.tasks.squad.json_reader import iter_squad_articles
from bert_tf.tokenization import FullTokenizer

FIRST_UNIQUE_ID = 1000000000  # the original numbers features from here
# The original's is_whitespace for paragraphs: only these five characters split words
# (not e.g. U+00A0, which the tokenizer later treats as a space inside the word).
PARAGRAPH_WHITESPACE = " \t\r\n\u202f"
_WORD = re.compile(f"[^{PARAGRAPH_WHITESPACE}]+")
_WORD_CACHE_SIZE = 32_768  # words per generation (~400 bytes each)
_STAT_KEYS = ("articles", "paragraphs", "questions", "examples", "impossible", "skipped_answer_mismatch")


@dataclasses.dataclass(slots=True)
class SquadExample:
    """One question over one paragraph. `doc_tokens` (the whitespace words of the paragraph) is
    the same list object for all questions of a paragraph. Training positions are word indexes
    in it; an impossible (v2.0) question has -1/-1 and answer text ""."""

    qas_id: object
    question_text: str
    doc_tokens: list
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


@dataclasses.dataclass(slots=True)
class InputFeatures:
    """One doc span of one example: `[CLS] query [SEP] span [SEP]` and padding, with the maps the
    predictions writer needs (token index -> word index, is this span the token's max context)."""

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False


def _field(container, key, where):
    if not isinstance(container, dict) or key not in container:
        raise ValueError(f"{where} has no {key!r} field")
    return container[key]


def _bump(stats, key, by=1):
    if stats is not None:
        stats[key] = stats.get(key, 0) + by


def read_squad_examples(input_file, is_training, version_2_with_negative, stats=None):
    """Yields the SquadExamples of a SQuAD JSON file in file order, reading it article by article.

    Training: exactly one answer per question (v1.1), or `is_impossible` (v2.0, which needs
    `version_2_with_negative`); answers whose text is not found in the words they cover are
    skipped with the original's warning, as the original does. `stats` (a dict, optional) gets
    counts: articles, paragraphs, questions, examples, impossible, skipped_answer_mismatch.
    Errors (ValueError naming the file and the article or question) come as the file is read.
    """
    if stats is not None:
        for key in _STAT_KEYS:
            stats.setdefault(key, 0)
    seen = set()  # question ids: a repeated one would score one question with another's answer
    for article_index, article in enumerate(iter_squad_articles(input_file)):
        _bump(stats, "articles")
        where = f"{input_file}: article {article_index}"
        paragraphs = _field(article, "paragraphs", where)
        for paragraph_index, paragraph in enumerate(paragraphs):
            here = f"{where} paragraph {paragraph_index}"
            context = _field(paragraph, "context", here)
            questions = _field(paragraph, "qas", here)
            if not isinstance(context, str):
                raise ValueError(f"{here}: 'context' is not a string")
            _bump(stats, "paragraphs")
            words = list(_WORD.finditer(context))
            doc_tokens = [word.group() for word in words]
            word_starts = [word.start() for word in words]
            for question_index, qa in enumerate(questions):
                qas_id = _field(qa, "id", f"{here} question {question_index}")
                question = _field(qa, "question", f"{input_file}: question {qas_id!r}")
                if qas_id in seen:
                    raise ValueError(f"{input_file}: question id {qas_id!r} appears twice (in {here} again)")
                seen.add(qas_id)
                _bump(stats, "questions")
                example = _example(input_file, is_training, version_2_with_negative, qa, qas_id, question,
                                   context, doc_tokens, word_starts, stats)
                if example is not None:
                    _bump(stats, "examples")
                    yield example


def _example(path, is_training, v2, qa, qas_id, question, context, doc_tokens, word_starts, stats):
    where = f"{path}: question {qas_id!r}"
    flagged_impossible = bool(qa.get("is_impossible", False))
    if flagged_impossible and not v2:
        raise ValueError(f"{where} is marked is_impossible (SQuAD v2.0 data): pass --version_2_with_negative")
    _bump(stats, "impossible", flagged_impossible)
    if not is_training:  # the original reads answers only for training
        return SquadExample(qas_id, question, doc_tokens)
    answers = _field(qa, "answers", where)
    if not answers and not flagged_impossible and not v2:
        raise ValueError(f"{where} has no answer (SQuAD v2.0 data): pass --version_2_with_negative")
    if flagged_impossible:
        return SquadExample(qas_id, question, doc_tokens, "", -1, -1, True)
    if len(answers) != 1:
        raise ValueError(
            f"{where} has {len(answers)} answers: for training, each question should have exactly 1 answer"
        )
    text = _field(answers[0], "text", f"{where} answer 0")
    offset = _field(answers[0], "answer_start", f"{where} answer 0")
    if not isinstance(text, str) or not isinstance(offset, int) or isinstance(offset, bool):
        raise ValueError(f"{where}: answer 0 needs a string 'text' and an integer 'answer_start'")
    last = offset + len(text) - 1
    if offset < 0 or offset >= len(context) or last >= len(context):
        raise ValueError(
            f"{where}: answer_start {offset} with text of length {len(text)} is outside the context "
            f"of length {len(context)}"
        )

    def word_at(char):  # the original's char_to_word_offset[char] (-1 before the first word)
        return bisect.bisect_right(word_starts, char % len(context)) - 1

    start, end = word_at(offset), word_at(last)
    # The original keeps only answers whose text is found in the words they cover.
    actual_text = " ".join(doc_tokens[start : end + 1])
    cleaned_answer_text = " ".join(text.split())
    if actual_text.find(cleaned_answer_text) == -1:
        logging.warning("Could not find answer: '%s' vs. '%s' (%s)", actual_text, cleaned_answer_text, where)
        _bump(stats, "skipped_answer_mismatch")
        return None
    return SquadExample(qas_id, question, doc_tokens, text, start, end, False)


class _WordPieces(dict):
    """word -> (`tokenizer.tokenize(word)`, their ids), made once per distinct word while it
    stays in the cache (words repeat). Texts are tokenized word by word where that is exact:
    with FullTokenizer, unless the text holds a character that splits words for str.split but
    is deleted by the tokenizer's cleaning (which joins its neighbours)."""

    _JOINING_SPACES = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
    _PRINTABLE_ASCII = re.compile("[!-~]+")
    # FullTokenizer's basic step on printable ASCII: every non-alphanumeric is punctuation.
    _ASCII_PIECES = re.compile("[A-Za-z0-9]+|[^A-Za-z0-9]")

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer, self.previous, self.wordpieces = tokenizer, {}, {}
        self.basic = tokenizer.basic_tokenizer if isinstance(tokenizer, FullTokenizer) else None

    def __missing__(self, word):
        # Two generations: when this one is full it becomes the previous one, whose words come
        # back on their next use; the rest is dropped (frequent words stay, memory is bounded).
        found = self.previous.get(word)
        if found is None:
            # Tuples of str and int: the garbage collector stops tracking them, so a large cache
            # does not make it rescan the heap (which, with TensorFlow loaded, is large).
            pieces = self._tokenize_word(word)
            found = (tuple(pieces), tuple(self.tokenizer.convert_tokens_to_ids(pieces)))
        if len(self) >= _WORD_CACHE_SIZE:
            self.previous = dict(self)
            self.clear()
        self[word] = found
        return found

    def _tokenize_word(self, word):
        """FullTokenizer.tokenize(word); for a printable-ASCII word, its rules in short (nothing to
        clean, no CJK, accents or non-ASCII punctuation): lower-case, split off punctuation."""
        basic = self.basic
        if basic is None or not self._PRINTABLE_ASCII.fullmatch(word) or word in basic.never_split:
            return self.tokenizer.tokenize(word)
        pieces, cache = [], self.wordpieces  # punctuation and case variants share their WordPieces
        for token in self._ASCII_PIECES.findall(word.lower() if basic.do_lower_case else word):
            found = cache.get(token)
            if found is None:
                if len(cache) >= _WORD_CACHE_SIZE:
                    cache.clear()
                found = cache[token] = tuple(self.tokenizer.wordpiece_tokenizer.tokenize(token))
            pieces += found
        return pieces

    def text(self, text):
        """(pieces, ids) of a whole text, as `tokenizer.tokenize(text)`."""
        if self.basic is None or self._JOINING_SPACES.search(text):
            pieces = self.tokenizer.tokenize(text)
            return pieces, self.tokenizer.convert_tokens_to_ids(pieces)
        found = list(map(self.__getitem__, text.split()))
        return [p for pieces, _ in found for p in pieces], [i for _, ids in found for i in ids]


class _Paragraph:
    """The WordPiece view of one paragraph, shared by its questions: tokens and ids, the maps
    between word and token indexes, and max-context flags per span layout."""

    def __init__(self, doc_tokens, word_pieces):
        self.doc_tokens = doc_tokens
        found = list(map(word_pieces.__getitem__, doc_tokens))
        self.tokens = [p for pieces, _ in found for p in pieces]
        self.ids = [i for _, ids in found for i in ids]
        counts = [len(pieces) for pieces, _ in found]
        self.tok_to_orig = np.repeat(np.arange(len(counts)), counts).tolist()
        self.orig_to_tok = list(itertools.accumulate(counts, initial=0))[:-1]
        self._max_context = {}

    def spans(self, max_tokens_for_doc, doc_stride):
        """The original's sliding window: (start, length) pairs, and per span the max-context flag
        of each of its tokens (cached: questions of equal length share the layout)."""
        if max_tokens_for_doc not in self._max_context:
            spans, start, total = [], 0, len(self.tokens)
            while start < total:
                length = min(total - start, max_tokens_for_doc)
                spans.append((start, length))
                if start + length == total:
                    break
                start += min(length, doc_stride)
            self._max_context[max_tokens_for_doc] = (spans, _max_context_flags(spans, total))
        return self._max_context[max_tokens_for_doc]


def _max_context_flags(spans, total):
    """Per span, per token: is this span the token's best one, where a span scores
    min(left context, right context) + 0.01 * its length and the first best span wins
    (the original's _check_is_max_context, for all tokens at once)."""
    if len(spans) <= 1:
        return [[True] * length for _, length in spans]
    scores = np.full((len(spans), total), -np.inf)
    for index, (start, length) in enumerate(spans):
        position = np.arange(length)
        scores[index, start : start + length] = np.minimum(position, length - 1 - position) + 0.01 * length
    best = np.argmax(scores, axis=0)  # first maximum on ties, as the original's strict ">"
    return [(best[start : start + length] == index).tolist() for index, (start, length) in enumerate(spans)]


def _improve_answer_span(doc_tokens, input_start, input_end, answer_tokens):
    """The original's search for the first sub-span, by start then longest, whose tokens are the
    answer's tokens. Tokens hold no spaces, so " ".join equality is list equality, and only
    sub-spans as long as the answer can match."""
    length = len(answer_tokens)
    if input_start < 0 or length == 0:  # degenerate: the original's loop as written
        wanted = " ".join(answer_tokens)
        for new_start in range(input_start, input_end + 1):
            for new_end in range(input_end, new_start - 1, -1):
                if " ".join(doc_tokens[new_start : new_end + 1]) == wanted:
                    return new_start, new_end
        return input_start, input_end
    for new_start in range(input_start, input_end - length + 2):
        if doc_tokens[new_start : new_start + length] == answer_tokens:
            return new_start, new_start + length - 1
    return input_start, input_end


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training):
    """Yields the InputFeatures of `examples` (any iterable), one per doc span, as the original's
    convert_examples_to_features: unique ids from 1000000000, `[CLS] query [SEP] span [SEP]`,
    the query cut to `max_query_length` tokens, spans `doc_stride` apart. Training positions are
    token indexes in the feature; an answer outside the span, or an impossible question, gets
    0/0 ([CLS]) and the feature is kept, as the original does."""
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"{shown.max_seq_length} {max_seq_length} must be greater than {shown.max_query_length} "
            f"{max_query_length} + 3"
        )
    if doc_stride < 1:
        raise ValueError(f"{shown.doc_stride} {doc_stride} must be at least 1")
    cls_id, sep_id = _special_ids(tokenizer)
    word_pieces = _WordPieces(tokenizer)

    paragraph = None
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        if paragraph is None or paragraph.doc_tokens is not example.doc_tokens:
            paragraph = _Paragraph(example.doc_tokens, word_pieces)
        query_tokens, query_ids = word_pieces.text(example.question_text)
        head_tokens = ["[CLS]", *query_tokens[:max_query_length], "[SEP]"]
        head_ids = [cls_id, *query_ids[:max_query_length], sep_id]
        doc_offset = len(head_tokens)

        impossible = bool(example.is_impossible)
        if is_training and not impossible:
            all_tokens, orig_to_tok = paragraph.tokens, paragraph.orig_to_tok
            tok_start = orig_to_tok[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = orig_to_tok[example.end_position + 1] - 1
            else:
                tok_end = len(all_tokens) - 1
            tok_start, tok_end = _improve_answer_span(
                all_tokens, tok_start, tok_end, word_pieces.text(example.orig_answer_text)[0]
            )

        spans, max_context = paragraph.spans(max_seq_length - doc_offset - 1, doc_stride)
        for span_index, (start, length) in enumerate(spans):
            end = start + length
            used = doc_offset + length + 1
            padding = [0] * (max_seq_length - used)
            positions = range(doc_offset, doc_offset + length)
            start_position = end_position = None
            if is_training:
                if not impossible and start <= tok_start and tok_end < end:
                    start_position, end_position = tok_start - start + doc_offset, tok_end - start + doc_offset
                else:  # out of span or impossible: point at [CLS]
                    start_position = end_position = 0
            yield InputFeatures(
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=span_index,
                tokens=head_tokens + paragraph.tokens[start:end] + ["[SEP]"],
                token_to_orig_map=dict(zip(positions, paragraph.tok_to_orig[start:end], strict=True)),
                token_is_max_context=dict(zip(positions, max_context[span_index], strict=True)),
                input_ids=head_ids + paragraph.ids[start:end] + [sep_id] + padding,
                input_mask=[1] * used + padding,
                segment_ids=[0] * doc_offset + [1] * (length + 1) + padding,
                start_position=start_position,
                end_position=end_position,
                is_impossible=impossible,
            )
            unique_id += 1


def _special_ids(tokenizer):
    missing = [t for t in ("[CLS]", "[SEP]") if t not in tokenizer.vocab]
    if missing:
        raise ValueError(f"the vocabulary has no {' or '.join(missing)}, which every SQuAD feature needs")
    return tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
