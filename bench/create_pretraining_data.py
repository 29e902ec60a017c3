"""create_pretraining_data.py throughput and memory, for 1 and 2 workers and 2 corpus sizes.

    python bench/create_pretraining_data.py [--sizes_mb=2.2,22] [--workers=1/1,1,2] [--dupe_factor=2]
    python bench/create_pretraining_data.py --smoke   # a 0.1 MB corpus: that the bench still runs

The corpus is generated from data/corpus.txt's sentences: documents of 1-4 random sentences,
about 10,900 documents per 2.2 MB, the shape of the issue's anchor corpus (for which the
original took 11-13 s wall and 650 MB RSS with dupe_factor=2, seq 128). Each configuration runs
the script in a fresh process; the table shows wall time (TensorFlow import included),
instances/s over that wall time and over the script's own processing time (after imports), and
the peak RSS of the largest process (workers included). `W/C` settings pin W workers to C cores,
so that 1 worker on 1 core against 2 workers on 2 cores shows how work scales with cores (one
process alone already keeps two cores busy with two threads). `bench/original_baseline.py`, the
original's procedure restated for timing, runs on the same corpus for the ratio to the original.
"""

import os
import random
import re
import subprocess
import sys
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_list("sizes_mb", ["2.2", "22"], "Corpus sizes in MB.")
flags.DEFINE_list(
    "workers", ["1/1", "1", "2"], "Values of --num_workers; 'W/C' runs W workers pinned to C cores (taskset)."
)
flags.DEFINE_list("baseline_sizes_mb", ["2.2", "22"], "Sizes on which to also time bench/original_baseline.py.")
flags.DEFINE_integer("dupe_factor", 2, "")
flags.DEFINE_integer("max_seq_length", 128, "")
flags.DEFINE_boolean("smoke", False, "A 0.1 MB corpus, one process and the original: checks that the bench runs.")

SMOKE = {"sizes_mb": ["0.1"], "workers": ["1"], "baseline_sizes_mb": ["0.1"], "dupe_factor": 1}


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


def _timed(command):
    """Runs `command`; returns (wall seconds, stderr, peak RSS MB of it and its children)."""
    start = time.perf_counter()
    result = subprocess.run(
        ["/usr/bin/time", "-f", "PEAK_RSS_KB=%M", *command],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO},  # bert_tf from this checkout
    )
    wall = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])
    peak_mb = int(re.search(r"PEAK_RSS_KB=(\d+)", result.stderr).group(1)) / 1024
    return wall, result.stdout + result.stderr, peak_mb


def run(corpus, workers, cores, out_dir):
    pin = ["taskset", "-c", ",".join(map(str, range(cores)))] if cores else []
    wall, log, peak_mb = _timed(pin + [
        sys.executable,
        os.path.join(REPO, "run_scripts", "create_pretraining_data.py"),
        f"--input_file={corpus}",
        f"--output_file={os.path.join(out_dir, 'a.tfrecord')},{os.path.join(out_dir, 'b.tfrecord')}",
        f"--vocab_file={os.path.join(REPO, 'data', 'vocab.txt')}",
        f"--dupe_factor={FLAGS.dupe_factor}",
        f"--max_seq_length={FLAGS.max_seq_length}",
        f"--num_workers={workers}",
        "--noprogress",
    ])
    instances = int(re.search(r"Instances: (\d+)", log).group(1))
    own = float(re.search(r"Wrote \d+ file\(s\) in ([\d.]+) s", log).group(1))
    return wall, own, instances, peak_mb


def baseline(corpus, out_dir):
    wall, log, peak_mb = _timed([
        sys.executable, os.path.join(REPO, "bench", "original_baseline.py"), corpus,
        os.path.join(REPO, "data", "vocab.txt"), os.path.join(out_dir, "baseline.tfrecord"), str(FLAGS.dupe_factor),
    ])
    found = re.search(r"BASELINE instances=(\d+) own_seconds=([\d.]+)", log)
    return wall, float(found.group(2)), int(found.group(1)), peak_mb


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    if FLAGS.max_seq_length != 128:
        raise SystemExit("the baseline is written for --max_seq_length=128")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'corpus':>9} {'run':>13} {'wall s':>7} {'instances':>9} {'inst/s wall':>11} {'inst/s own':>10} "
              f"{'peak RSS MB':>11}")
        for size in map(float, FLAGS.sizes_mb):
            corpus = os.path.join(tmp, f"corpus_{size}.txt")
            make_corpus(corpus, size)
            rates = {}
            runs = [(f"workers={s}", s) for s in FLAGS.workers]
            if str(size) in map(str, map(float, FLAGS.baseline_sizes_mb)):
                runs.append(("original", None))
            for name, setting in runs:
                out = tempfile.mkdtemp(dir=tmp)
                if setting is None:
                    wall, own, instances, peak = baseline(corpus, out)
                else:
                    workers, _, cores = setting.partition("/")
                    wall, own, instances, peak = run(corpus, int(workers), int(cores or 0), out)
                rates[name] = instances / own
                print(f"{size:>7.1f}MB {name:>13} {wall:>7.1f} {instances:>9} {instances / wall:>11.0f} "
                      f"{instances / own:>10.0f} {peak:>11.0f}", flush=True)
            one = rates.get("workers=1")
            if one and "original" in rates:
                print(f"{size:>7.1f}MB one process / original (own time): {one / rates['original']:.1f}x")
            if "workers=1/1" in rates and "workers=2" in rates:
                print(f"{size:>7.1f}MB 2 workers on 2 cores / 1 worker on 1 core: "
                      f"{rates['workers=2'] / rates['workers=1/1']:.2f}x")
        print("anchor (the original, issue text): 2.2 MB, 1 process, ~38,000 instances in 11-13 s wall "
              "(~3,200 instances/s), 650 MB RSS")

if __name__ == "__main__":
    app.run(main)
