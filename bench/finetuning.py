"""Fine-tuning throughput from text: run_classifier's loop beside keras-hub's BertTextClassifier,
and LoRA beside full fine-tuning.

    python bench/finetuning.py [--num_layers=4 --hidden_size=256 --num_heads=4
                                --intermediate_size=1024 --seq_length=128 --batch_size=32
                                --steps=30 --rounds=3] [--lora_rank=8]
    python bench/finetuning.py --smoke [--lora_rank=4]  # tiny config, a few steps (the suite's)

Both sides start from the same sentence pairs (text) and the same vocab.txt, and tokenize in
their tf.data pipelines:
- ours: `Trainer` + `ClassifierTask` exactly as run_classifier.py runs them (the in-graph
  BertTokenizer with the original's rules and BertPackInputs in a tf.data map, the original's
  AdamW with global-norm clipping), fp32, without XLA (the scripts' default) and with it;
- keras-hub: `BertTextClassifier`, Keras AdamW, jit_compile on (its default), the two ways its
  docs show: with its `BertTextClassifierPreprocessor` attached, `fit` on a tf.data dataset of
  string pairs (keras-hub maps the preprocessor over it with AUTOTUNE and prefetch), and with
  preprocessor=None on token ids (tokenized once here and cached: no tokenizing in the loop).
  The ratio is to the faster of the two.
The configurations take turns for `--rounds` rounds; medians and the fastest rounds are printed
with every measurement, and the ratios of both. Text: data/corpus.txt's sentences, joined into
pairs long enough to fill the sequence; the vocab: data/vocab.txt padded with [unusedN] tokens to
--vocab_size (the tables and embeddings have BERT-Base's size).

With --lora_rank=R our loop also runs with LoRA (`run_classifier.py --lora_rank=R`: adapters on
the encoder's attention and feed-forward layers, the rest frozen) in the same rounds, and both
print their optimizer state (AdamW's variables: count, numbers and bytes, read from the optimizer)
and their trainable parameters. Both are then trained from the same random initialisation on a
separable task of the same model size (`--accuracy_steps` steps; one corpus sentence with a marker
word put in: "winter" for label 1, "market" for 0; dev sentences are not among the training ones)
and their dev accuracy printed: full fine-tuning at --learning_rate, LoRA at --lora_learning_rate
(LoRA takes a larger rate, as in the paper's runs).
"""

import os
import random
import statistics
import sys
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # run as `python bench/finetuning.py`: bert_tf from this checkout

from bert_tf import BertConfig  # noqa: E402
from bert_tf.tasks.classifier.inputs import encode_examples  # noqa: E402
from bert_tf.tasks.classifier.processors import InputExample  # noqa: E402
from bert_tf.tasks.classifier.task import ClassifierTask  # noqa: E402
from bert_tf.training.trainer import Trainer, TrainingSettings  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_layers", 4, "")
flags.DEFINE_integer("hidden_size", 256, "")
flags.DEFINE_integer("num_heads", 4, "")
flags.DEFINE_integer("intermediate_size", 1024, "")
flags.DEFINE_integer("vocab_size", 30522, "")
flags.DEFINE_integer("seq_length", 128, "")
flags.DEFINE_integer("batch_size", 32, "Global batch.")
flags.DEFINE_integer("steps", 30, "Measured steps per round (after the warm-up).")
flags.DEFINE_integer("examples", 4096, "Training examples (sentence pairs).")
flags.DEFINE_integer("rounds", 3, "Alternating measurement rounds.")
flags.DEFINE_list("xla", ["false", "true"], "Our loop with XLA off / on.")
flags.DEFINE_integer("lora_rank", 0, "Also our loop with LoRA of this rank (0: full fine-tuning only).")
flags.DEFINE_float("lora_alpha", None, "LoRA's alpha (default: the rank).")
flags.DEFINE_float("learning_rate", 1e-4, "The separable task: full fine-tuning's learning rate.")
flags.DEFINE_float("lora_learning_rate", 1e-3, "The separable task: LoRA's learning rate.")
flags.DEFINE_integer("accuracy_steps", 300, "The separable task: training steps (0: no accuracy figures).")
flags.DEFINE_integer("accuracy_seq_length", 32, "The separable task: its sequence length.")
flags.DEFINE_bool("smoke", False, "A tiny config and a few steps (flags given still win).")

# --smoke: what a quick check of every code path needs.
SMOKE = dict(num_layers=2, hidden_size=32, num_heads=2, intermediate_size=64, vocab_size=1000, seq_length=32,
             batch_size=8, steps=2, examples=64, rounds=1, xla=["false"], accuracy_steps=6)
MARKERS = ("market", "winter")  # the separable task's label 0 and 1 words


def vocab_file(directory):
    with open(os.path.join(REPO, "data", "vocab.txt"), encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    tokens += [f"[unused{i}]" for i in range(FLAGS.vocab_size - len(tokens))]
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    return path


def sentence_pairs():
    """(text_a, text_b, label) with about seq_length word pieces per pair, from the corpus."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    rng = random.Random(0)
    words_per_side = FLAGS.seq_length // 2

    def text():
        out = []
        while len(" ".join(out).split()) < words_per_side:
            out.append(rng.choice(sentences))
        return " ".join(out)

    return [(text(), text(), rng.randrange(2)) for _ in range(FLAGS.examples)]


def bert_config():
    return BertConfig(
        vocab_size=FLAGS.vocab_size, hidden_size=FLAGS.hidden_size, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=FLAGS.num_heads, intermediate_size=FLAGS.intermediate_size, type_vocab_size=2,
    )


def lora(rank):
    return {"lora_rank": rank, "lora_alpha": FLAGS.lora_alpha if rank else None}


def ours(xla, pairs, vocab, out, lora_rank=0):
    """Our loop's examples/s (the median execution after the first, which traces) and the trainer."""
    task = ClassifierTask(bert_config(), ["0", "1"], vocab_file=vocab, max_seq_length=FLAGS.seq_length)
    examples = [InputExample(f"train-{i}", a, b, str(label)) for i, (a, b, label) in enumerate(pairs)]
    features = encode_examples(examples, task.labels, "single")
    settings = TrainingSettings(
        output_dir=out, train_batch_size=FLAGS.batch_size, learning_rate=5e-5, num_train_steps=10 + FLAGS.steps,
        num_warmup_steps=10, save_checkpoints_steps=10 + FLAGS.steps, steps_per_execution=10, jit_compile=xla, seed=1,
        **lora(lora_rank),
    )
    rates = []
    trainer = Trainer(task, settings, tf.distribute.OneDeviceStrategy("/cpu:0"))
    trainer.train(features, on_log=lambda step, logs: rates.append(logs["examples_per_second"]))
    return statistics.median(rates[1:]), trainer


def optimizer_state(trainer):
    """`(variables, numbers, bytes)` of the optimizer's state (its slots and scalars), exactly."""
    variables = trainer.optimizer.variables
    numbers = [int(np.prod(v.shape)) for v in variables]
    size = sum(n * np.dtype(v.dtype).itemsize for n, v in zip(numbers, variables, strict=True))
    return len(variables), sum(numbers), size


def separable_examples():
    """(train, dev) InputExamples: a corpus sentence (no marker in it, at most 16 words) with
    MARKERS[label] put in at a random place; dev sentences are not among the training ones."""
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.split() for line in f if 0 < len(line.split()) <= 16]
    sentences = [s for s in sentences if not {w.lower().strip(".,") for w in s} & set(MARKERS)]
    rng = random.Random(2)
    rng.shuffle(sentences)
    cut = len(sentences) * 4 // 5

    def examples(pool, n, name):
        out = []
        for i in range(n):
            words, label = list(rng.choice(pool)), rng.randrange(2)
            words.insert(rng.randrange(len(words) + 1), MARKERS[label])
            out.append(InputExample(f"{name}-{i}", " ".join(words), None, str(label)))
        return out

    return examples(sentences[:cut], 1024, "train"), examples(sentences[cut:], 256, "dev")


def accuracy(vocab, out, lora_rank=0):
    """Dev accuracy on the separable task after --accuracy_steps (same initialisation, seed 1)."""
    task = ClassifierTask(bert_config(), ["0", "1"], vocab_file=vocab, max_seq_length=FLAGS.accuracy_seq_length,
                          pair=False)
    train, dev = (encode_examples(e, task.labels, "single") for e in separable_examples())
    steps = FLAGS.accuracy_steps
    settings = TrainingSettings(
        output_dir=out, train_batch_size=FLAGS.batch_size, eval_batch_size=FLAGS.batch_size,
        learning_rate=FLAGS.lora_learning_rate if lora_rank else FLAGS.learning_rate, num_train_steps=steps,
        num_warmup_steps=steps // 10, save_checkpoints_steps=steps, steps_per_execution=min(steps, 50), seed=1,
        **lora(lora_rank),
    )
    trainer = Trainer(task, settings, tf.distribute.OneDeviceStrategy("/cpu:0"))
    trainer.train(train)
    return trainer.evaluate(dev)["eval_accuracy"]


def keras_hub_baselines(pairs, vocab):
    """Builds keras-hub's classifier; returns {name: function measuring its examples/s once}
    for the two ways its docs show: raw strings through the attached preprocessor, and
    "preprocessed integer data" (here tokenized once and cached) with preprocessor=None."""
    import keras_hub

    with open(vocab, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer(vocabulary=tokens, lowercase=True), sequence_length=FLAGS.seq_length
    )
    a, b, y = (list(column) for column in zip(*pairs, strict=True))
    text = tf.data.Dataset.from_tensor_slices(((a, b), y)).shuffle(len(y), seed=0)
    ids = text.batch(256).map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE).unbatch().cache()
    runs = {}
    for name, attached, ds in (("keras-hub text", preprocessor, text), ("keras-hub token ids", None, ids)):
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=FLAGS.vocab_size, num_layers=FLAGS.num_layers, num_heads=FLAGS.num_heads,
            hidden_dim=FLAGS.hidden_size, intermediate_dim=FLAGS.intermediate_size, max_sequence_length=512,
        )
        model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=attached)
        model.compile(
            optimizer=keras.optimizers.AdamW(5e-5, weight_decay=0.01),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=True,
        )
        ds = ds.repeat().batch(FLAGS.batch_size).prefetch(tf.data.AUTOTUNE)
        model.fit(ds, steps_per_epoch=10, epochs=1, verbose=0)  # warm-up and compile

        def measure(model=model, ds=ds):
            start = time.perf_counter()
            model.fit(ds, steps_per_epoch=FLAGS.steps, epochs=1, verbose=0)
            return FLAGS.steps * FLAGS.batch_size / (time.perf_counter() - start)

        runs[f"{name} xla=True"] = measure
    return runs


def measure(pairs, vocab, hubs, tmp):
    """{configuration: examples/s in each round} and our last trainer of each rank (0: full)."""
    rates, trainers = {}, {}
    for _ in range(FLAGS.rounds):
        for rank in dict.fromkeys([0, FLAGS.lora_rank]):
            for xla in (x == "true" for x in FLAGS.xla):
                rate, trainers[rank] = ours(xla, pairs, vocab, tempfile.mkdtemp(dir=tmp), rank)
                rates.setdefault(f"bert_tf {f'lora={rank} ' if rank else ''}xla={xla}", []).append(rate)
        for name, measure_once in hubs.items():
            rates.setdefault(name, []).append(measure_once())
    return rates, trainers


def report_rates(rates, hubs):
    medians = {key: statistics.median(values) for key, values in rates.items()}
    for key, values in rates.items():
        print(
            f"{key:28s}: {medians[key]:7.1f} examples/s (rounds: {', '.join(f'{r:.1f}' for r in values)})",
            flush=True,
        )
    if hubs:  # full fine-tuning against keras-hub's (which fine-tunes every weight)
        full = [k for k in rates if k.startswith("bert_tf xla")]
        ours_best, ours_median = max(max(rates[k]) for k in full), max(medians[k] for k in full)
        hub_best = max(max(rates[k]) for k in hubs)
        hub_median = max(medians[k] for k in hubs)
        print(
            f"bert_tf / keras-hub (the faster of its two ways) = {ours_median / hub_median:.2f}x (medians), "
            f"{ours_best / hub_best:.2f}x (fastest rounds)",
            flush=True,
        )


def report_lora(trainers, vocab, tmp):
    """Trainable parameters and optimizer state of full fine-tuning and LoRA, then their accuracy on
    the separable task."""
    rank = FLAGS.lora_rank
    states = {r: optimizer_state(trainers[r]) for r in (0, rank)}
    for r, (count, numbers, size) in states.items():
        name = f"lora={r} alpha={trainers[r].settings.lora_alpha:g}" if r else "full fine-tuning"
        print(f"{name:28s}: {trainers[r].parameters()}; optimizer state: {count} variables, {numbers:,} numbers, "
              f"{size / 2**20:.2f} MiB", flush=True)
    print(f"LoRA's optimizer state is {states[rank][2] / states[0][2]:.2%} of full fine-tuning's", flush=True)
    if FLAGS.accuracy_steps:
        accuracies = {r: accuracy(vocab, tempfile.mkdtemp(dir=tmp), r) for r in (0, rank)}
        print(
            f"separable task ({FLAGS.accuracy_steps} steps of {FLAGS.batch_size}, seq {FLAGS.accuracy_seq_length}), "
            f"dev accuracy: full fine-tuning {accuracies[0]:.3f} (learning rate {FLAGS.learning_rate:g}), "
            f"lora={rank} {accuracies[rank]:.3f} (learning rate {FLAGS.lora_learning_rate:g})",
            flush=True,
        )


def main(argv):
    del argv
    logging.set_verbosity(logging.WARNING)  # TensorFlow's checkpoint saver logs each save
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    print(
        f"config: L={FLAGS.num_layers} H={FLAGS.hidden_size} A={FLAGS.num_heads} I={FLAGS.intermediate_size} "
        f"vocab={FLAGS.vocab_size} seq={FLAGS.seq_length} batch={FLAGS.batch_size}, fp32, sentence pairs from text"
    )
    try:
        import keras_hub  # noqa: F401
    except ImportError:
        keras_hub = None
        print("keras-hub is not installed: no side-by-side comparison (pip install keras-hub)")
    pairs = sentence_pairs()
    with tempfile.TemporaryDirectory() as tmp:
        vocab = vocab_file(tmp)
        hubs = keras_hub_baselines(pairs, vocab) if keras_hub else {}
        rates, trainers = measure(pairs, vocab, hubs, tmp)
        report_rates(rates, hubs)
        if FLAGS.lora_rank:
            report_lora(trainers, vocab, tmp)


if __name__ == "__main__":
    app.run(main)
