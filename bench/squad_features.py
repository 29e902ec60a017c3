"""SQuAD pre-processing: ours (bert_tf.tasks.squad.features) against the original run_squad.py's procedure.

    python bench/squad_features.py [--questions=10000] [--sizes=1,4] [--original_sizes=1]

Generates a SQuAD v1.1-format training file (generated words, Zipf-distributed like text, with
glued punctuation and numbers; ~5 questions per paragraph of 120-150 words, 3% of 300-450;
answers of 1-4 words, some inside a word) and a WordPiece vocab over it (frequent words whole,
the rest in pieces).
Each run is a fresh process that reads the file, converts it to features (seq 384, stride 128,
query 64, training) and writes the TFRecord file. It reports its own wall and CPU seconds after
imports (CPU time is the fairer measure on a shared machine), its peak RSS, and that peak less
the RSS after imports (TensorFlow's share): what the work added.

The original's procedure is the restatement the tests check ours against, tests/original_squad.py
(json.load of the whole file, the example list, every paragraph word tokenized again for each
question, a scan of all spans per token for max context, one `tf.train.Example` per feature). The
two files must hold the same records in the same order; they are compared as parsed
`tf.train.Example`s, since the original's bytes vary from run to run (protobuf writes the feature
map in a per-process hash order).

A smoke run (the suite's, tests/bench/test_squad_features.py):
    python bench/squad_features.py --questions=40 --sizes=1 --original_sizes=1 --predict_shape=1,32,2,64 \
      --predict_batch_size=4 --max_seq_length=64 --doc_stride=32 --max_query_length=16
"""

import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/squad_features.py`: bert_tf and tests from this checkout
FLAGS = flags.FLAGS
flags.DEFINE_integer("questions", 10000, "Questions in the 1x file.")
flags.DEFINE_list("sizes", ["1", "4"], "File sizes, in multiples of --questions, for our runs.")
flags.DEFINE_list("original_sizes", ["1"], "Sizes on which to also run the original's procedure.")
flags.DEFINE_integer("max_seq_length", 384, "")
flags.DEFINE_integer("doc_stride", 128, "")
flags.DEFINE_integer("max_query_length", 64, "")
flags.DEFINE_string("predict_shape", "4,256,4,1024",
                    "Prediction throughput: layers,hidden,heads,intermediate ('' skips it).")
flags.DEFINE_integer("predict_batch_size", 32, "Prediction throughput: the batch size.")
flags.DEFINE_enum("run", None, ["ours", "original"], "Internal: run one procedure in this process.")
flags.DEFINE_string("input", None, "Internal.")
flags.DEFINE_string("vocab", None, "Internal.")
flags.DEFINE_string("output", None, "Internal.")

_CONSONANTS, _VOWELS = "bcdfghjklmnprstvwz", "aeiou"


# ---- Synthetic data.

def _syllables(rng, n):
    return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) + rng.choice(["", "", "n", "r", "s"])
                   for _ in range(n))


def make_lexicon(rng, size=30000):
    words = {_syllables(rng, rng.choice([1, 1, 2, 2, 2, 3, 3, 4])) for _ in range(size * 2)}
    return sorted(words)[:size]


def _context(rng, lexicon, weights):
    # A few long paragraphs, as SQuAD has: more than one doc span at seq 384.
    words = rng.choices(lexicon, weights, k=rng.randint(300, 450) if rng.random() < 0.03 else rng.randint(120, 150))
    for i in range(len(words)):
        roll = rng.random()
        if roll < 0.08:
            words[i] += rng.choice([",", ".", ";", "'s"])
        elif roll < 0.10:
            words[i] = str(rng.randint(1, 2030))
        elif roll < 0.12:
            words[i] = f"({words[i]})"
        elif roll < 0.20:
            words[i] = words[i].capitalize()
    return words


def make_squad(path, questions, seed=0):
    rng = random.Random(seed)
    lexicon = make_lexicon(rng)
    weights = [1.0 / (rank + 10) for rank in range(len(lexicon))]
    articles, made = [], 0
    while made < questions:
        paragraphs = []
        for _ in range(40):
            words = _context(rng, lexicon, weights)
            starts, context = [], ""
            for word in words:
                starts.append(len(context))
                context += word + " "
            context = context[:-1]
            qas = []
            for _ in range(min(rng.randint(3, 7), questions - made)):
                i = rng.randrange(len(words) - 4)
                j = i + rng.randint(0, 3)
                begin, end = starts[i], starts[j] + len(words[j])
                if rng.random() < 0.1 and end - begin > 3:
                    end -= 1  # inside the last word
                question = " ".join(rng.choices(lexicon, weights, k=rng.randint(5, 14))).capitalize() + "?"
                qas.append({"answers": [{"answer_start": begin, "text": context[begin:end]}], "question": question,
                            "id": f"{made:024x}"})
                made += 1
            paragraphs.append({"context": context, "qas": qas})
            if made >= questions:
                break
        articles.append({"title": f"article_{len(articles)}", "paragraphs": paragraphs})
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"data": articles, "version": "1.1"}, f)


def make_vocab(path, size=20000, seed=0):
    """Specials, punctuation and digits, the most frequent words whole, syllables as pieces."""
    rng = random.Random(seed)
    lexicon = make_lexicon(rng)
    pieces = sorted({c + v + e for c in _CONSONANTS for v in _VOWELS for e in ["", "n", "r", "s"]})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *",.;'()?", *"0123456789", *pieces,
              *("##" + p for p in pieces), *("##" + d for d in "0123456789")]
    tokens += [w for w in lexicon[: size - len(tokens)] if w not in set(tokens)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")


# ---- One run per process; the driver.

def _rss_mb():
    """The resident memory now (Linux), after the imports: the base the work adds to."""
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024


def run_one():
    from bert_tf.tasks.squad import features as squad
    from bert_tf.tasks.squad.feature_writer import write_features
    from bert_tf.tokenization import FullTokenizer
    from tests.original_squad import OriginalFeatureWriter, original_examples, original_features

    tokenizer = FullTokenizer(FLAGS.vocab, do_lower_case=True)
    lengths = (FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length)
    base_mb = _rss_mb()
    start, start_cpu = time.perf_counter(), time.process_time()
    if FLAGS.run == "ours":
        stats = {}
        examples = squad.read_squad_examples(FLAGS.input, True, False, stats)
        count = write_features(squad.convert_examples_to_features(examples, tokenizer, *lengths, True),
                               FLAGS.output, True)
        num_examples = stats["examples"]
    else:
        examples = original_examples(FLAGS.input, True, False)
        writer = OriginalFeatureWriter(FLAGS.output, True)
        for feature in original_features(examples, tokenizer, *lengths, True):
            writer.process_feature(feature)
        writer.close()
        count, num_examples = writer.num_features, len(examples)
    seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"RESULT examples={num_examples} features={count} seconds={seconds:.3f} cpu={cpu:.3f} "
          f"peak_mb={peak_mb:.0f} base_mb={base_mb:.0f}")


def _subprocess(kind, data, vocab, output):
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__), f"--run={kind}", f"--input={data}", f"--vocab={vocab}",
         f"--output={output}", f"--max_seq_length={FLAGS.max_seq_length}", f"--doc_stride={FLAGS.doc_stride}",
         f"--max_query_length={FLAGS.max_query_length}"],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO},
    )
    found = re.search(r"RESULT examples=(\d+) features=(\d+) seconds=([\d.]+) cpu=([\d.]+) peak_mb=(\d+) "
                      r"base_mb=(\d+)", result.stdout)
    if result.returncode or not found:
        raise SystemExit(result.stdout[-2000:] + result.stderr[-3000:])
    examples, count, seconds, cpu, peak, base = found.groups()
    return int(examples), int(count), float(seconds), float(cpu), int(peak), int(base)


def same_records(path_a, path_b):
    import tensorflow as tf

    a = tf.data.TFRecordDataset(path_a).as_numpy_iterator()
    b = tf.data.TFRecordDataset(path_b).as_numpy_iterator()
    count = 0
    for record_a, record_b in zip(a, b, strict=True):
        if tf.train.Example.FromString(record_a) != tf.train.Example.FromString(record_b):
            return False, count
        count += 1
    return True, count


def predict_throughput(data, vocab, tmp):
    """Features/s of `Trainer.predict` (run_squad's prediction) on the 1x file's features, with a
    randomly initialised BertSpanLabeler of --predict_shape; the first pass (tracing) untimed."""
    import tensorflow as tf

    from bert_tf.config import BertConfig
    from bert_tf.tasks.squad import features as squad
    from bert_tf.tasks.squad.feature_writer import write_features
    from bert_tf.tasks.squad.inputs import SquadRecords
    from bert_tf.tasks.squad.task import SquadTask
    from bert_tf.tokenization import FullTokenizer
    from bert_tf.training.trainer import Trainer, TrainingSettings

    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    path = os.path.join(tmp, "predict.tf_record")
    lengths = (FLAGS.max_seq_length, FLAGS.doc_stride, FLAGS.max_query_length)
    count = write_features(
        squad.convert_examples_to_features(squad.read_squad_examples(data, False, False), tokenizer, *lengths, False),
        path, False,
    )
    layers, hidden, heads, intermediate = (int(v) for v in FLAGS.predict_shape.split(","))
    config = BertConfig(vocab_size=len(tokenizer.vocab), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate)
    settings = TrainingSettings(output_dir=os.path.join(tmp, "predict_run"),
                                predict_batch_size=FLAGS.predict_batch_size)
    trainer = Trainer(SquadTask(config, FLAGS.max_seq_length), settings, tf.distribute.get_strategy())
    records = SquadRecords(path, min(count, 20 * FLAGS.predict_batch_size), FLAGS.max_seq_length, False)
    trainer.predict(SquadRecords(path, FLAGS.predict_batch_size, FLAGS.max_seq_length, False))  # traces
    start = time.perf_counter()
    out = trainer.predict(records)
    seconds = time.perf_counter() - start
    print(f"prediction (L={layers} H={hidden} A={heads} I={intermediate}, seq {FLAGS.max_seq_length}, batch "
          f"{FLAGS.predict_batch_size}, fp32, Trainer.predict from the TFRecord): "
          f"{records.count / seconds:.1f} features/s "
          f"({len(out['start_logits'])} rows in {seconds:.1f} s; {count} features in the file)", flush=True)


def main(argv):
    del argv
    if FLAGS.run:
        return run_one()
    with tempfile.TemporaryDirectory() as tmp:
        vocab = os.path.join(tmp, "vocab.txt")
        make_vocab(vocab)
        print(f"seq {FLAGS.max_seq_length}, stride {FLAGS.doc_stride}, query {FLAGS.max_query_length}, training; "
              "times are each process's own, after imports")
        print(f"{'questions':>9} {'MB':>5} {'run':>8} {'examples':>8} {'features':>8} {'wall s':>7} {'CPU s':>6} "
              f"{'features/CPU s':>14} {'peak RSS MB':>11} {'added by work':>14}")
        for size in FLAGS.sizes:
            questions = int(float(size) * FLAGS.questions)
            data = os.path.join(tmp, f"squad_{size}x.json")
            make_squad(data, questions)
            megabytes = os.path.getsize(data) / 1e6
            rates, walls, outputs = {}, {}, {}
            kinds = ["ours"] + (["original"] if size in FLAGS.original_sizes else [])
            for kind in kinds:
                outputs[kind] = os.path.join(tmp, f"{kind}_{size}x.tf_record")
                examples, count, seconds, cpu, peak, base = _subprocess(kind, data, vocab, outputs[kind])
                rates[kind], walls[kind] = count / cpu, seconds
                print(f"{questions:>9} {megabytes:>5.1f} {kind:>8} {examples:>8} {count:>8} {seconds:>7.2f} "
                      f"{cpu:>6.2f} {rates[kind]:>14.0f} {peak:>11} {peak - base:>14}", flush=True)
            if "original" in rates:
                same, records = same_records(outputs["ours"], outputs["original"])
                print(f"{questions:>9} records identical to the original's: {same} ({records} records); speed-up "
                      f"{rates['ours'] / rates['original']:.1f}x in CPU time, "
                      f"{walls['original'] / walls['ours']:.1f}x in wall time", flush=True)
        if FLAGS.predict_shape:
            predict_throughput(os.path.join(tmp, f"squad_{FLAGS.sizes[0]}x.json"), vocab, tmp)


if __name__ == "__main__":
    app.run(main)
