"""Fine-tuning throughput from text: run_classifier's loop beside keras-hub's BertTextClassifier.

    python bench/finetuning.py [--num_layers=4 --hidden_size=256 --num_heads=4
                                --intermediate_size=1024 --seq_length=128 --batch_size=32
                                --steps=30 --rounds=3]

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
"""

import os
import random
import statistics
import tempfile
import time

import keras
import tensorflow as tf
from absl import app, flags

from bert_tf import BertConfig
from bert_tf.tasks.classifier.inputs import encode_examples
from bert_tf.tasks.classifier.processors import InputExample
from bert_tf.tasks.classifier.task import ClassifierTask
from bert_tf.training.trainer import Trainer, TrainingSettings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def ours(xla, pairs, vocab, out):
    config = BertConfig(
        vocab_size=FLAGS.vocab_size, hidden_size=FLAGS.hidden_size, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=FLAGS.num_heads, intermediate_size=FLAGS.intermediate_size, type_vocab_size=2,
    )
    task = ClassifierTask(config, ["0", "1"], vocab_file=vocab, max_seq_length=FLAGS.seq_length)
    examples = [InputExample(f"train-{i}", a, b, str(label)) for i, (a, b, label) in enumerate(pairs)]
    features = encode_examples(examples, task.labels, "single")
    settings = TrainingSettings(
        output_dir=out, train_batch_size=FLAGS.batch_size, learning_rate=5e-5, num_train_steps=10 + FLAGS.steps,
        num_warmup_steps=10, save_checkpoints_steps=10 + FLAGS.steps, steps_per_execution=10, jit_compile=xla, seed=1,
    )
    rates = []
    Trainer(task, settings, tf.distribute.OneDeviceStrategy("/cpu:0")).train(
        features, on_log=lambda step, logs: rates.append(logs["examples_per_second"])
    )
    return statistics.median(rates[1:])  # the first execution includes tracing


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


def main(argv):
    del argv
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
        rates = {}
        for _ in range(FLAGS.rounds):
            for xla in (x == "true" for x in FLAGS.xla):
                rates.setdefault(f"bert_tf xla={xla}", []).append(ours(xla, pairs, vocab, tempfile.mkdtemp(dir=tmp)))
            for name, measure in hubs.items():
                rates.setdefault(name, []).append(measure())
        medians = {key: statistics.median(values) for key, values in rates.items()}
        for key, values in rates.items():
            print(
                f"{key:28s}: {medians[key]:7.1f} examples/s (rounds: {', '.join(f'{r:.1f}' for r in values)})",
                flush=True,
            )
        if hubs:
            ours_best = max(max(v) for k, v in rates.items() if k.startswith("bert_tf"))
            ours_median = max(m for k, m in medians.items() if k.startswith("bert_tf"))
            hub_best = max(max(rates[k]) for k in hubs)
            hub_median = max(medians[k] for k in hubs)
            print(
                f"bert_tf / keras-hub (the faster of its two ways) = {ours_median / hub_median:.2f}x (medians), "
                f"{ours_best / hub_best:.2f}x (fastest rounds)",
                flush=True,
            )


if __name__ == "__main__":
    app.run(main)
