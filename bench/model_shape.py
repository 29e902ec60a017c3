"""The model-shape flags of the training benches (bench/pretraining.py, bench/finetuning.py,
bench/optimizer_step.py), defined once: a 4-layer BERT of hidden size 256 with BERT-Base's vocab
size unless given; SMOKE, the tiny shape of their --smoke runs. Imported by a bench after it has put
the checkout on sys.path."""

from absl import flags

from bert_tf import BertConfig

FLAGS = flags.FLAGS
flags.DEFINE_integer("num_layers", 4, "Transformer blocks.")
flags.DEFINE_integer("hidden_size", 256, "")
flags.DEFINE_integer("num_heads", 4, "Attention heads.")
flags.DEFINE_integer("intermediate_size", 1024, "The feed-forward layers' inner size.")
flags.DEFINE_integer("vocab_size", 30522, "")

SMOKE = {"num_layers": 2, "hidden_size": 32, "num_heads": 2, "intermediate_size": 64, "vocab_size": 1000}


def bert_config():
    """The BertConfig of the flags' shape (two token types, the original's other defaults)."""
    return BertConfig(
        vocab_size=FLAGS.vocab_size, hidden_size=FLAGS.hidden_size, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=FLAGS.num_heads, intermediate_size=FLAGS.intermediate_size, type_vocab_size=2,
    )


def described():
    """"L=... H=... A=... I=... vocab=...", as the benches print their configuration."""
    return (f"L={FLAGS.num_layers} H={FLAGS.hidden_size} A={FLAGS.num_heads} I={FLAGS.intermediate_size} "
            f"vocab={FLAGS.vocab_size}")
