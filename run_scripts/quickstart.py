"""The README quickstart: a smoke run of the whole checkpoint -> features path on `data/`.

It initialises a tiny BERT (data/bert_config_tiny.json, data/vocab.txt), writes it as a
checkpoint in Google's original layout, then runs `extract_features.py` on it with the
original's command line, and prints where everything is. A few seconds on 2 CPU cores.
"""

import json
import os
import subprocess
import sys

import keras
from absl import app, flags, logging

from bert_tf import BertConfig, BertEncoder, checkpoints

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "/tmp/bert_tf_quickstart", "Where to write everything.")
flags.DEFINE_integer("seed", 12345, "Seed of the random initialisation.")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")


def main(argv):
    del argv
    keras.utils.set_random_seed(FLAGS.seed)
    out = FLAGS.output_dir
    config = BertConfig.from_json_file(os.path.join(DATA, "bert_config_tiny.json"))
    encoder = BertEncoder.from_bert_config(config)
    prefix = checkpoints.save_original_checkpoint(
        encoder, os.path.join(out, "init", "bert_model.ckpt"), global_step=0
    )
    logging.info("Initialised a %d-layer BERT; original-layout checkpoint: %s", config.num_hidden_layers, prefix)

    input_file = os.path.join(out, "input.txt")
    with open(os.path.join(DATA, "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()][:6]
    with open(input_file, "w", encoding="utf-8") as f:
        f.write("\n".join(sentences[:4]) + "\n")
        f.write(f"{sentences[4]} ||| {sentences[5]}\n")  # a sentence pair

    output_file = os.path.join(out, "features.jsonl")
    command = [
        sys.executable,
        os.path.join(REPO, "run_scripts", "extract_features.py"),
        f"--input_file={input_file}",
        f"--output_file={output_file}",
        f"--vocab_file={os.path.join(DATA, 'vocab.txt')}",
        f"--bert_config_file={os.path.join(out, 'init', 'bert_config.json')}",
        f"--init_checkpoint={prefix}",
        "--layers=-1,-2",
        "--max_seq_length=64",
        "--batch_size=8",
    ]
    print("$ " + " ".join(command[1:]), flush=True)
    subprocess.run(command, check=True)

    with open(output_file, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    first = lines[0]["features"]
    print(f"\nQuickstart done. Output in {out}:")
    print(f"  checkpoint (original layout): {prefix}")
    print(f"  features: {output_file}: {len(lines)} lines; line 0 has {len(first)} tokens "
          f"({' '.join(t['token'] for t in first)}), {len(first[0]['layers'])} layers of "
          f"{len(first[0]['layers'][0]['values'])} values each")


if __name__ == "__main__":
    app.run(main)
