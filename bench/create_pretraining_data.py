"""create_pretraining_data.py throughput and memory, for 1 and 2 workers and 2 corpus sizes.

    python bench/create_pretraining_data.py [--sizes_mb=2.2,22] [--workers=1,2] [--dupe_factor=2]

The corpus is generated from data/corpus.txt's sentences: documents of 1-4 random sentences,
about 10,900 documents per 2.2 MB, the shape of the issue's anchor corpus (for which the
original took 11-13 s wall and 650 MB RSS with dupe_factor=2, seq 128). Each configuration runs
the script in a fresh process; the table shows wall time (TensorFlow import included),
instances/s over that wall time and over the script's own processing time, and the peak RSS of
the largest process (workers included).
"""

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
FLAGS = flags.FLAGS
flags.DEFINE_list("sizes_mb", ["2.2", "22"], "Corpus sizes in MB.")
flags.DEFINE_list("workers", ["1", "2"], "Values of --num_workers.")
flags.DEFINE_integer("dupe_factor", 2, "")
flags.DEFINE_integer("max_seq_length", 128, "")


def make_corpus(path, megabytes, seed=0):
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    rng = random.Random(seed)
    target, size = megabytes * 1e6, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            doc = "\n".join(rng.choice(sentences) for _ in range(rng.randint(1, 4))) + "\n\n"
            f.write(doc)
            size += len(doc.encode("utf-8"))


def run(corpus, workers, out_dir):
    command = [
        sys.executable,
        os.path.join(REPO, "run_scripts", "create_pretraining_data.py"),
        f"--input_file={corpus}",
        f"--output_file={os.path.join(out_dir, 'a.tfrecord')},{os.path.join(out_dir, 'b.tfrecord')}",
        f"--vocab_file={os.path.join(REPO, 'data', 'vocab.txt')}",
        f"--dupe_factor={FLAGS.dupe_factor}",
        f"--max_seq_length={FLAGS.max_seq_length}",
        f"--num_workers={workers}",
        "--noprogress",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    wall = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    instances = int(re.search(r"Instances: (\d+)", result.stderr).group(1))
    own = float(re.search(r"Wrote \d+ file\(s\) in ([\d.]+) s", result.stderr).group(1))
    return wall, own, instances, peak_mb


def main(argv):
    del argv
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'corpus':>9} {'workers':>7} {'wall s':>7} {'instances':>9} {'inst/s wall':>11} {'inst/s own':>10} {'peak RSS MB':>11}")
        for size in map(float, FLAGS.sizes_mb):
            corpus = os.path.join(tmp, f"corpus_{size}.txt")
            make_corpus(corpus, size)
            for workers in map(int, FLAGS.workers):
                out = tempfile.mkdtemp(dir=tmp)
                wall, own, instances, peak = run(corpus, workers, out)
                print(f"{size:>7.1f}MB {workers:>7} {wall:>7.1f} {instances:>9} {instances / wall:>11.0f} "
                      f"{instances / own:>10.0f} {peak:>11.0f}", flush=True)
        print("anchor (the original, issue text): 2.2 MB, 1 process, ~38,000 instances in 11-13 s wall "
              "(~3,200 instances/s), 650 MB RSS")


if __name__ == "__main__":
    app.run(main)
