"""Text to compare the in-graph tokenizer with FullTokenizer on.

- Real prose: the docstrings of well-documented standard-library modules of the running Python
  (read at test time, nothing copied into the repository), plus `data/corpus.txt`.
- Seeded random lines mixing every Unicode area the original rules treat specially.
"""

import importlib
import inspect
import os
import random
import warnings

_PROSE_MODULES = (
    "argparse", "asyncio", "collections", "concurrent.futures", "csv", "dataclasses", "datetime",
    "decimal", "difflib", "email.message", "enum", "fractions", "functools", "http.client",
    "inspect", "ipaddress", "itertools", "json", "logging", "pathlib", "pickle", "random", "re",
    "shutil", "socket", "statistics", "string", "subprocess", "tarfile", "textwrap", "threading",
    "typing", "unittest", "urllib.parse", "uuid", "zipfile",
)
_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "corpus.txt")


def prose_lines(limit=4000):
    lines = []
    with open(_DATA, encoding="utf-8") as f:
        lines.extend(line.strip() for line in f if line.strip())
    for name in _PROSE_MODULES:
        module = importlib.import_module(name)
        docs = [inspect.getdoc(module)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # typing.io and friends
            for _, member in sorted(vars(module).items()):
                if (inspect.isclass(member) or inspect.isfunction(member)) and getattr(
                    member, "__module__", ""
                ) == name:
                    docs.append(inspect.getdoc(member))
        for doc in filter(None, docs):
            lines.extend(line.strip() for line in doc.splitlines() if len(line.strip()) > 3)
    return list(dict.fromkeys(lines))[:limit]


def _chars(*ranges):
    return [chr(c) for lo, hi in ranges for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF]


# Each pool: characters the rules treat one particular way.
POOLS = {
    "ascii_letters": _chars((0x41, 0x5A), (0x61, 0x7A), (0x30, 0x39)),
    "ascii_punct": _chars((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "controls": _chars((0x0, 0x8), (0xB, 0x1F), (0x7F, 0x9F))
    + ["\u00ad", "\u061c", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060",
       "\u2066", "\ufeff", "\ufffd", "\U000e0001", "\U000e0041"],
    "spaces": [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u00a0", "\u1680", "\u2028",
               "\u2029", "\u202f", "\u205f", "\u3000"] + _chars((0x2000, 0x200A)),
    "latin_accented": _chars((0xC0, 0x24F), (0x1E00, 0x1EFF)) + ["\u0130", "\u0131", "\u1e9e", "\u00df"],
    "combining": _chars((0x300, 0x36F), (0x1AB0, 0x1ACE), (0x1DC0, 0x1DFF), (0x20D0, 0x20F0)),
    "greek": _chars((0x370, 0x3FF), (0x1F00, 0x1FFE)) + ["\u03a3"] * 40 + ["\u0345"] * 5,
    "cyrillic": _chars((0x400, 0x52F)),
    "arabic_hebrew": _chars((0x590, 0x5FF), (0x600, 0x6FF)),
    "indic_se_asian": _chars((0x900, 0x97F), (0xB80, 0xBFF), (0xE00, 0xE7F), (0x1B00, 0x1B7F),
                             (0xA980, 0xA9DF), (0x1700, 0x171F)),
    "cjk_in_ranges": _chars((0x4E00, 0x4EFF), (0x9F00, 0x9FFF), (0x3400, 0x34FF), (0x20000, 0x200FF),
                            (0x2A700, 0x2A7FF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)),
    "cjk_out_of_ranges": _chars((0x2E80, 0x2EF3), (0x2F00, 0x2FD5), (0x3000, 0x303F), (0x31C0, 0x31E3),
                                (0x3200, 0x33FF), (0xFE30, 0xFE4F), (0x2CEB0, 0x2CFFF), (0x30000, 0x300FF)),
    "kana_hangul": _chars((0x3040, 0x30FF), (0xFF65, 0xFF9F), (0xAC00, 0xAD00), (0x1100, 0x11FF),
                          (0x3130, 0x318F)) + ["\u302e", "\u302f"],
    "emoji": _chars((0x1F300, 0x1F64F), (0x1F900, 0x1F9FF), (0x1F3FB, 0x1F3FF), (0x1F1E6, 0x1F1FF))
    + ["\u200d", "\ufe0f", "\u20e3"],
    "ligatures_compat": _chars((0xFB00, 0xFB06), (0xFB13, 0xFB17), (0x1C4, 0x1CC), (0x2100, 0x214F),
                               (0x2460, 0x24FF), (0x1D400, 0x1D4FF)) + ["\u0132", "\u0133"],
    "fullwidth": _chars((0xFF01, 0xFF5E), (0xFFE0, 0xFFEE)),
    "musical_marks": _chars((0x1D100, 0x1D1EA)),
    "any": None,  # a uniformly random code point, assigned or not
}


def _random_char(rng, pool):
    if pool is None:
        while True:
            cp = rng.randrange(0x110000)
            if not 0xD800 <= cp <= 0xDFFF:
                return chr(cp)
    return rng.choice(pool)


def random_lines(n=3000, seed=1234):
    rng = random.Random(seed)
    names = list(POOLS)
    lines = []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(1, 10)):
            # A word mostly from one or two areas, with a stray character from anywhere.
            home = [rng.choice(names) for _ in range(rng.randint(1, 2))]
            length = rng.choice([1, 2, 3, 5, 8, 13])
            chars = [_random_char(rng, POOLS[rng.choice(home)]) for _ in range(length)]
            if rng.random() < 0.2:
                chars.insert(rng.randrange(len(chars) + 1), _random_char(rng, POOLS[rng.choice(names)]))
            words.append("".join(chars))
        separators = [" "] * 8 + POOLS["spaces"] + [""]
        line = words[0]
        for w in words[1:]:
            line += rng.choice(separators) + w
        lines.append(line)
    # Words around the 200-character limit (in characters, not bytes).
    lines += ["a" * 200, "a" * 201, "\u00e9" * 150 + " x", "\u00e9" * 201, "\u4e00" * 250, "ab" * 120]
    # Final-sigma contexts and special tokens typed in text.
    lines += ["\u039f\u0394\u039f\u03a3 \u0391\u03a3. \u0391\u03a3\u0391 \u03a3 \u0391\u03a3'\u0391 \u0391\u03a3\u0345",
              "[CLS] hello [SEP] [MASK]! [CLS]x [mask]"]
    return lines
