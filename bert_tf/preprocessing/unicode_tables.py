"""Per-code-point tables of the original tokenization rules, for the in-graph tokenizer.

Built from this Python's `unicodedata` with the very predicates `bert_tf.tokenization` uses, so
the in-graph tokenizer and `FullTokenizer` share one Unicode database and one statement of the
rules. Pure numpy; built once per process (about a second) and baked into graphs as constants,
or written into RE2 character classes (`char_class`) for TensorFlow's regex ops.
"""

import functools
import hashlib
import os
import sys
import unicodedata

import numpy as np

from bert_tf import tokenization
from bert_tf.io_utils import atomic_write

NUM_CODE_POINTS = 0x110000
CAPITAL_SIGMA, SMALL_SIGMA, FINAL_SIGMA = 0x3A3, 0x3C3, 0x3C2

# Bit flags of `flags()`.
DROP = 1  # removed by the original's _clean_text: NUL, U+FFFD, Cc/Cf other than \t \n \r
SPACE = 2  # separates words: _is_whitespace (mapped to " ") or str.isspace (split() splits on it)
CJK = 4  # a CJK ideograph in the original's ranges: a word of its own
PUNCT = 8  # _is_punctuation: a token of its own
SIGMA_CASED = 16  # not case-ignorable and cased: decides the final-sigma context of str.lower
SIGMA_IGNORABLE = 32  # case-ignorable: skipped when str.lower looks for that context
MN = 64  # category Mn: stripped after NFD when lower-casing
REORDER = 128  # NFD(lower(c)) has a spacing mark with a combining class, which NFD's
# canonical ordering can move past another one (a few viramas, tone and musical marks)


def _probe_sigma(ch):
    """Python's str.lower maps Σ to ς after a cased letter (skipping case-ignorable characters)
    unless a cased letter follows. Python exposes neither property, so ask str.lower itself."""
    cased_not_ignorable = (ch + "\u03a3").lower()[-1] == "\u03c2"
    ignorable = not cased_not_ignorable and ("A" + ch + "\u03a3").lower()[-1] == "\u03c2"
    return cased_not_ignorable, ignorable


@functools.cache
def _assigned():
    """Code points that are neither unassigned (Cn), private-use (Co) nor surrogates (Cs): every
    other code point has no property the rules look at (CJK ranges aside), so only these need
    the per-character probes."""
    return [cp for cp in range(NUM_CODE_POINTS) if unicodedata.category(chr(cp)) not in ("Cn", "Co", "Cs")]


@functools.cache
def _cache_key():
    """Python version, Unicode version and the rules' sources: what the tables depend on."""
    sources = b"".join(
        open(path, "rb").read() for path in (tokenization.__file__, __file__)  # noqa: SIM115
    )
    return hashlib.sha256(sys.version.encode() + unicodedata.unidata_version.encode() + sources).hexdigest()[:16]


def _cache_path():
    """Where the tables of this Python (its Unicode database) and these rules are cached."""
    root = os.environ.get("BERT_TF_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "bert_tf")
    return os.path.join(root, f"unicode_tables-{_cache_key()}.npz")


def _cached(name, build):
    """Loads table `name` from the on-disk cache, or builds it (~0.2 s each) and stores it.

    The cache is an optimisation only: any failure to read or write it just builds the table.
    """
    path = _cache_path()
    try:
        with np.load(path) as saved:
            if name in saved:
                return saved[name]
            stored = dict(saved)
    except (OSError, ValueError, KeyError):
        stored = {}
    value = build()
    stored[name] = value
    try:
        with atomic_write(path, "wb") as f:
            np.savez(f, **stored)
    except OSError:  # the cache is an optimisation: an unwritable one is rebuilt next time
        pass
    return value


@functools.cache
def flags():
    """uint8 `[0x110000]`: the bit flags above for every code point."""
    return _cached("flags", _build_flags)


def _build_flags():
    out = np.zeros(NUM_CODE_POINTS, np.uint8)
    for lo, hi in tokenization._CJK_RANGES:
        out[lo : hi + 1] |= CJK  # unassigned code points in the ranges count too
    for cp in _assigned():
        ch = chr(cp)
        f = 0
        if cp == 0 or cp == 0xFFFD or tokenization._is_control(ch):
            f |= DROP
        elif tokenization._is_whitespace(ch) or ch.isspace():
            f |= SPACE
        if tokenization._is_punctuation(ch):
            f |= PUNCT
        cased, ignorable = _probe_sigma(ch)
        f |= SIGMA_CASED * cased | SIGMA_IGNORABLE * ignorable
        if unicodedata.category(ch) == "Mn":
            f |= MN
        decomposed = unicodedata.normalize("NFD", ch.lower())
        if any(unicodedata.combining(c) and unicodedata.category(c) != "Mn" for c in decomposed):
            f |= REORDER
        out[cp] |= f
    return out


@functools.cache
def combining_classes():
    """uint8 `[0x110000]`: canonical combining class (NFD orders marks by it)."""
    return _cached("combining_classes", _build_combining_classes)


def _build_combining_classes():
    out = np.zeros(NUM_CODE_POINTS, np.uint8)
    for cp in _assigned():
        out[cp] = unicodedata.combining(chr(cp))
    return out


@functools.cache
def lower_nfd_map(strip_marks):
    """Dense tables of NFD(str.lower(c)) per code point, Mn removed when `strip_marks`:

        lengths int32 `[0x110000]`: how many code points c becomes (1 where c stays c);
        starts int32 `[0x110000]`: where they start in `values`, or -1 where c stays c;
        values int32: the concatenated mappings.

    Σ maps to σ here; the final-sigma context is applied in graph. Separators stay themselves.
    """
    names = ("lengths", "starts", "values")
    tag = "stripped" if strip_marks else "nfd"
    built = {}

    def part(name):
        def build():
            if not built:
                built.update(zip(names, _build_lower_nfd_map(strip_marks), strict=True))
            return built[name]

        return _cached(f"{tag}_{name}", build)

    return tuple(part(name) for name in names)


def _build_lower_nfd_map(strip_marks):
    f = flags()
    lengths = np.ones(NUM_CODE_POINTS, np.int32)
    starts = np.full(NUM_CODE_POINTS, -1, np.int32)
    values = []
    for cp in _assigned():
        if f[cp] & (DROP | SPACE):
            continue
        ch = chr(cp)
        mapped = unicodedata.normalize("NFD", ch.lower())
        if strip_marks:
            mapped = "".join(c for c in mapped if unicodedata.category(c) != "Mn")
        if mapped != ch:
            lengths[cp] = len(mapped)
            starts[cp] = len(values)
            values.extend(ord(c) for c in mapped)
    values = np.asarray(values, np.int32)
    # The rules split words before lower-casing: a mapping must not create separators.
    assert not np.any(f[values] & (DROP | SPACE)), "lower/NFD produced a separator character"
    return lengths, starts, values


def clean_map(do_lower_case, strip_marks=True, space_punctuation=True):
    """What the original makes of each code point, as a ragged table: int32 row_splits
    `[0x110001]` and int32 values; built once per process for each setting, however the
    arguments are passed.

    _clean_text: DROP characters become nothing, separators (SPACE) a " ". With
    `do_lower_case`: NFD(str.lower(c)), Mn removed when `strip_marks` (Σ becomes σ; the
    final-sigma context is applied in graph). Then " c " for every CJK ideograph c
    (_tokenize_chinese_chars) and, with `space_punctuation`, every punctuation character
    (_run_split_on_punc, which looks at the lower-cased characters), so splitting at whitespace
    is all that is left to do.
    """
    return _clean_map(bool(do_lower_case), bool(strip_marks), bool(space_punctuation))


@functools.cache
def _clean_map(do_lower_case, strip_marks, space_punctuation):
    f = flags()
    if do_lower_case:
        lengths, starts, values = lower_nfd_map(strip_marks)
    else:  # every character stays itself
        lengths, starts, values = np.ones(NUM_CODE_POINTS, np.int32), np.full(NUM_CODE_POINTS, -1, np.int32), []
    mapped = starts >= 0
    lengths = np.where(mapped, lengths, 1).astype(np.int32)
    lengths[(f & DROP) != 0] = 0
    splits = np.zeros(NUM_CODE_POINTS + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    out = np.empty(int(splits[-1]), np.int32)
    itself = ~mapped & (lengths == 1)
    out[splits[:-1][itself]] = np.where((f[itself] & SPACE) != 0, ord(" "), np.flatnonzero(itself))
    for k in range(int(lengths[mapped].max(initial=0))):  # the k-th code point of each mapping
        at = mapped & (lengths > k)
        out[splits[:-1][at] + k] = values[starts[at] + k]
    # The in-graph tokenizer lower-cases whole lines, not words, and spaces out CJK after
    # lower-casing; the same characters come out because a word boundary (whitespace, a CJK
    # ideograph) ends the final-sigma search (neither cased nor case-ignorable) and NFD's
    # reordering (a starter), and CJK ideographs map to single CJK ideographs, nothing else
    # to one. Spaced-out characters must be starters too, or the spaces would cut NFD's runs.
    ccc = combining_classes()
    boundary = (f & (SPACE | CJK)) != 0
    assert not np.any(f[boundary] & (SIGMA_CASED | SIGMA_IGNORABLE)), "a word boundary in final sigma"
    assert not np.any(ccc[boundary]), "a word boundary is not an NFD starter"
    row_of_value = np.repeat(np.arange(NUM_CODE_POINTS), lengths)
    assert np.all(lengths[(f & CJK) != 0] == 1), "a CJK ideograph does not map to one character"
    assert np.array_equal(f[out] & CJK, f[row_of_value] & CJK), "CJK-ness changes in the mapping"
    spaced = (f[out] & (CJK | PUNCT if space_punctuation else CJK)) != 0
    assert not np.any(ccc[out[spaced]]), "a spaced-out character is not an NFD starter"
    ends = np.r_[0, np.cumsum(np.where(spaced, 3, 1))]
    wide = np.full(int(ends[-1]), ord(" "), np.int32)
    wide[ends[:-1] + spaced] = out  # " c " or c
    return ends[splits].astype(np.int32), wide


def char_class(mask):
    """The body of an RE2 character class ("\\x{21}-\\x{2f}...") matching exactly the code
    points where `mask` (`[0x110000]`) is non-zero."""
    cps = np.flatnonzero(mask)
    if not len(cps):
        raise ValueError("char_class of an empty set")
    breaks = np.flatnonzero(np.diff(cps) != 1)
    firsts, lasts = np.r_[cps[0], cps[breaks + 1]], np.r_[cps[breaks], cps[-1]]
    ranges = zip(firsts, lasts, strict=True)
    return "".join(f"\\x{{{a:x}}}" + (f"-\\x{{{b:x}}}" if b > a else "") for a, b in ranges)
