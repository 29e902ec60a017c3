"""Tokenization throughput on the same text: FullTokenizer (the original's rules in Python) vs the
in-graph BertTokenizer in a tf.function and inside a tf.data map, with tensorflow-text's
FastBertTokenizer as a reference (it does NOT follow the original's rules: ICU normalisation and
character classes, so its ids can differ).

    python bench/tokenization.py [--casing=both] [--repeat=20] [--unicode_lines=25000]
    python bench/tokenization.py --smoke   # a little text, two rounds: that the bench still runs

Texts: English prose (data/corpus.txt plus standard-library docstrings, repeated `--repeat`
times) and a generated Unicode mix (accented Latin, Greek, Cyrillic, CJK with kana, Arabic and
Devanagari words, a few English words and non-ASCII punctuation). FullTokenizer is timed
`--full_rounds` times; the in-graph contestants `--rounds` times, in turn within each round.
Figures are medians; ratios are taken within this one run. As other processes may share the
machine, each round's interference is measured (/proc/stat), and the medians are also given over
the quiet rounds alone (other processes busy less than a tenth of a core), when there are any.

tf.function and tf.data get the same batches of `--batch_size` lines, made beforehand (for
tf.data, `from_tensor_slices(lines).batch(n).cache()`, read once; cutting them costs a pass the
time printed apart, the same for any tokenizer). "One pass" times what an epoch pays on a new
iterator: creating it (which instantiates the map function) and reading every batch; its
teardown is printed apart (see `_Epoch`). A training loop keeps one iterator over the repeated
pipeline: "iterator kept" times `--passes` passes through one iterator, per pass.
"""

import importlib
import inspect
import os
import random
import statistics
import sys
import time

import tensorflow as tf
import tensorflow_text as tf_text
from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/tokenization.py`: bert_tf from this checkout

from bert_tf.preprocessing import BertTokenizer  # noqa: E402
from bert_tf.tokenization import FullTokenizer  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("vocab_file", os.path.join(REPO, "data", "vocab.txt"), "")
flags.DEFINE_enum("casing", "both", ["both", "uncased", "cased"], "do_lower_case True, False or both.")
flags.DEFINE_integer("repeat", 20, "How many times the English text is repeated.")
flags.DEFINE_integer("unicode_lines", 25000, "Lines of generated Unicode text.")
flags.DEFINE_integer("batch_size", 1024, "Lines per in-graph call.")
flags.DEFINE_integer("rounds", 15, "Measurements of each in-graph contestant.")
flags.DEFINE_integer("full_rounds", 3, "Measurements of FullTokenizer (seconds each).")
flags.DEFINE_integer("passes", 5, "Passes over the text through one tf.data iterator, for the kept-iterator figure.")
flags.DEFINE_boolean("smoke", False, "A little text, uncased, two rounds: checks that the bench still runs.")

SMOKE = {"casing": "uncased", "repeat": 1, "unicode_lines": 200, "batch_size": 256, "rounds": 2, "full_rounds": 1,
         "passes": 2}


def _text():
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    for name in ("argparse", "collections", "json", "logging", "pathlib", "re", "subprocess", "typing"):
        module = importlib.import_module(name)
        for member in [module, *vars(module).values()]:
            doc = inspect.getdoc(member) if (inspect.ismodule(member) or inspect.isclass(member)) else None
            if doc:
                lines.extend(line.strip() for line in doc.splitlines() if line.strip())
    return lines


def _letters(first, last, skip=()):
    return [chr(c) for c in range(first, last + 1) if c not in skip]


# (consonants, vowels or vowel signs) per script: words are random syllables.
_SYLLABLES = {
    "latin": (list("bcdfghjklmnprstvz"), list("aeiouyàáâäãåæçèéêëìíîïñòóôöøùúûüýœß")),
    "greek": (_letters(0x3B1, 0x3C9, (0x3C2,)), list("άέήίόύώϊϋΐΰ")),
    "cyrillic": (_letters(0x431, 0x43F) + _letters(0x441, 0x448), list("аеиоуыэюяё")),
    "arabic": (_letters(0x628, 0x64A, range(0x63B, 0x641)), ["\u064e", "\u064f", "\u0650", "\u0627", "\u0648", ""]),
    "devanagari": (_letters(0x915, 0x939), [*"\u093e\u093f\u0940\u0941\u0947\u094b\u094d", ""]),
}
_CJK_AND_KANA = _letters(0x4E00, 0x62FF) + _letters(0x3041, 0x3093) + _letters(0x30A1, 0x30F3)
_ENGLISH_WORDS = "the of and to in is was for on that with as by at from it an be this are or".split()
_PUNCTUATION = list(",.;:!?()\u00ab\u00bb\u201c\u201d\u3001\u3002\u060c\u0964\u2014")


def _unicode(num_lines, seed=0):
    """Generated lines, each mostly in one script (CJK lines often without spaces)."""
    rng = random.Random(seed)
    scripts = [*_SYLLABLES, "cjk"]
    lines = []
    for _ in range(num_lines):
        script = rng.choice(scripts)
        words = []
        for _ in range(rng.randint(4, 20)):
            if rng.random() < 0.15:
                word = rng.choice(_ENGLISH_WORDS)
            elif script == "cjk":
                word = "".join(rng.choice(_CJK_AND_KANA) for _ in range(rng.randint(1, 6)))
            else:
                consonants, vowels = _SYLLABLES[script]
                word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(1, 4)))
                case = rng.random()
                word = word.upper() if case < 0.03 else word[0].upper() + word[1:] if case < 0.18 else word
            words.append(word + (rng.choice(_PUNCTUATION) if rng.random() < 0.12 else ""))
        lines.append(("" if script == "cjk" and rng.random() < 0.5 else " ").join(words))
    return lines


class _Epoch:
    """One pass over a tf.data pipeline, as an epoch makes it: create the iterator, read every
    batch. Its teardown is timed apart: on a busy machine tf.data's autotuning can hold it 0.05 to
    0.15 s after a 3 MB pass (with any map function; never with autotuning off)."""

    def __init__(self, dataset):
        self.dataset, self.teardown = dataset, []

    def __call__(self):
        iterator = iter(self.dataset)
        batches = list(iterator)
        self.iterator = iterator  # deleted by finish(), after the clock stops
        return batches

    def finish(self):
        start = time.perf_counter()
        self.iterator = None
        self.teardown.append(time.perf_counter() - start)


def _contestants(lines, do_lower_case):
    """name -> function returning the ids of `lines` (as lists, or tensors of batches)."""
    python = FullTokenizer(FLAGS.vocab_file, do_lower_case=do_lower_case)
    layer = BertTokenizer(FLAGS.vocab_file, do_lower_case=do_lower_case)
    graph = tf.function(lambda batch: layer(batch), input_signature=[tf.TensorSpec([None], tf.string)])
    batches = [tf.constant(lines[i : i + FLAGS.batch_size]) for i in range(0, len(lines), FLAGS.batch_size)]
    # The same batches for tf.data: cut from the lines once, then cached (timed apart, below).
    lines_in_batches = tf.data.Dataset.from_tensor_slices(lines).batch(FLAGS.batch_size)
    cached = lines_in_batches.cache()
    list(cached)
    dataset = cached.map(layer, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    # Blank vocab lines are placeholders FastBertTokenizer cannot take; they match nothing.
    vocab = [t or f"\U000f0000{i}" for i, t in enumerate(layer.vocabulary)]
    fast = tf_text.FastBertTokenizer(
        vocab, token_out_type=tf.int32, lower_case_nfd_strip_accents=do_lower_case, max_bytes_per_word=200
    )
    fast_graph = tf.function(lambda batch: fast.tokenize(batch), input_signature=[tf.TensorSpec([None], tf.string)])
    graph(batches[0]), fast_graph(batches[0])  # trace once; the tf.data map traces in map()
    in_graph = {
        "function": lambda: [graph(b) for b in batches],
        "tf.data": _Epoch(dataset),
        "tf.data kept": _Epoch(dataset.repeat(FLAGS.passes)),
        "fast_bert": lambda: [fast_graph(b) for b in batches],
        "batching": lambda: list(lines_in_batches),
    }
    return (lambda: [python.convert_tokens_to_ids(python.tokenize(line)) for line in lines]), in_graph


def _busy():
    """(CPU seconds the machine has been busy, of them this process's), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(cpu) - cpu[3] - cpu[4]) / hz, (int(own[11]) + int(own[12])) / hz


def _timed(run):
    start = time.perf_counter()
    out = run()
    seconds = time.perf_counter() - start
    if isinstance(run, _Epoch):
        run.finish()
    return seconds, out


def _measure(lines, do_lower_case):
    """Times per contestant (seconds, one a round), ids as lists (made outside the timing),
    tf.data teardown times, and the cores other processes kept busy in each in-graph round."""
    full, in_graph = _contestants(lines, do_lower_case)
    times = {"full": []} | {name: [] for name in in_graph}
    for _ in range(FLAGS.full_rounds):
        seconds, full_ids = _timed(full)
        times["full"].append(seconds)
    outputs, others = {}, []
    for _ in range(FLAGS.rounds):
        busy, start = _busy(), time.perf_counter()
        for name, run in in_graph.items():
            seconds, outputs[name] = _timed(run)
            times[name].append(seconds)
        if busy and (now := _busy()):
            others.append(max(0.0, (now[0] - busy[0]) - (now[1] - busy[1])) / (time.perf_counter() - start))
    times["tf.data kept"] = [t / FLAGS.passes for t in times["tf.data kept"]]
    outputs["tf.data kept"] = outputs["tf.data kept"][: len(outputs["function"])]
    ids = {name: [row for batch in outputs[name] for row in batch.to_list()] for name in _IN_GRAPH_ROWS}
    ids["full"] = full_ids
    teardown = in_graph["tf.data"].teardown + in_graph["tf.data kept"].teardown
    return times, ids, teardown, others


_ROWS = {
    "full": "FullTokenizer (Python, the original's rules)",
    "function": "BertTokenizer in a tf.function",
    "tf.data": "BertTokenizer in tf.data, one pass, new iterator",
    "tf.data kept": "BertTokenizer in tf.data, per pass of an iterator kept",
    "fast_bert": "FastBertTokenizer (tensorflow-text, reference)",
}
_IN_GRAPH_ROWS = ("function", "tf.data", "tf.data kept", "fast_bert")
_QUIET = 0.1  # cores other processes may use in a quiet round


def _report(name, megabytes, times, ids, quiet):
    speed = megabytes / statistics.median(times[name])
    full = megabytes / statistics.median(times["full"])
    line = f"  {_ROWS[name]:56s} {speed:6.2f} MB/s {speed / full:5.1f}x FullTokenizer"
    if quiet:
        line += f" | quiet rounds: {megabytes / statistics.median(quiet):6.2f} MB/s"
    line += f"; ids identical to FullTokenizer: {ids[name] == ids['full']}"
    return line + ("; does NOT follow the original rules" if name == "fast_bert" else "")


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    texts = {"English": _text() * FLAGS.repeat, "Unicode mix": _unicode(FLAGS.unicode_lines)}
    casings = {"both": [True, False], "uncased": [True], "cased": [False]}[FLAGS.casing]
    print(
        f"medians of {FLAGS.rounds} rounds ({FLAGS.full_rounds} for FullTokenizer); batches of "
        f"{FLAGS.batch_size} lines; vocab {FLAGS.vocab_file}; {os.cpu_count()} cores"
    )
    for do_lower_case in casings:
        for text_name, lines in texts.items():
            megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
            times, ids, teardown, others = _measure(lines, do_lower_case)
            quiet_rounds = [i for i, load in enumerate(others) if load < _QUIET]
            quiet = {name: [times[name][i] for i in quiet_rounds] for name in _IN_GRAPH_ROWS}
            print(f"\n{text_name}, {'uncased' if do_lower_case else 'cased'}: {len(lines)} lines, {megabytes:.2f} MB")
            print(f"  {_ROWS['full']:56s} {megabytes / statistics.median(times['full']):6.2f} MB/s")
            for name in _IN_GRAPH_ROWS:
                print(_report(name, megabytes, times, ids, quiet[name]))

            def ratios(t):
                function, fast = statistics.median(t["function"]), statistics.median(t["fast_bert"])
                return (
                    f"tf.data / tf.function {function / statistics.median(t['tf.data']):.2f} one pass, "
                    f"{function / statistics.median(t['tf.data kept']):.2f} iterator kept; "
                    f"BertTokenizer / FastBertTokenizer, both in a tf.function, {fast / function:.2f}"
                )

            print(f"  all {len(others) or FLAGS.rounds} rounds: {ratios(times)}")
            if quiet_rounds:
                print(f"  {len(quiet_rounds)} quiet rounds: {ratios(quiet)}")
            if others:
                print(f"  other processes kept {statistics.median(others):.2f} cores busy in the median round")
            print(
                "  not timed: cutting the lines into batches in tf.data "
                f"{statistics.median(times['batching']) * 1000:.0f}"
                f" ms a pass (any tokenizer); tf.data iterator teardown {statistics.median(teardown) * 1000:.0f} ms"
            )


if __name__ == "__main__":
    app.run(main)
