"""create_pretraining_data.py throughput and memory, for 1 and 2 workers and 2 corpus sizes,
locally and as a Beam pipeline on the DirectRunner.

    python bench/create_pretraining_data.py [--sizes_mb=2.2,22] [--workers=1/1,1,2] [--dupe_factor=2]
    python bench/create_pretraining_data.py --sizes_mb=200 --workers=2 --beam_workers=2 --baseline_sizes_mb=
    python bench/create_pretraining_data.py --smoke   # a 0.1 MB corpus: that the bench still runs

The corpus is generated from data/corpus.txt's sentences: documents of 1-4 random sentences,
about 10,900 documents per 2.2 MB, the shape of the issue's anchor corpus (for which the
original took 11-13 s wall and 650 MB RSS with dupe_factor=2, seq 128). Each configuration runs
the script in a fresh process; the table shows wall time (TensorFlow import included),
instances/s over that wall time and over the script's own processing time (after imports), and
the peak RSS of the script's own process ("main MB") and of the largest process it started
("worker MB": a local worker process, or a Beam SDK worker). `W/C` settings pin W workers to C
cores, so that 1 worker on 1 core against 2 workers on 2 cores shows how work scales with cores
(one process alone already keeps two cores busy with two threads). `--beam_workers=W` adds a run
with --runner=beam on the DirectRunner with W worker processes (multi_processing; W=1:
in_memory, in the script's own process), and its ratio to the local run with as many workers on
the same corpus: the Beam path's overhead. `bench/original_baseline.py`, the original's procedure
restated for timing, runs on the same corpus for the ratio to the original.
"""

import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
flags.DEFINE_list("sizes_mb", ["2.2", "22"], "Corpus sizes in MB.")
flags.DEFINE_list(
    "workers", ["1/1", "1", "2"], "Values of --num_workers; 'W/C' runs W workers pinned to C cores (taskset)."
)
flags.DEFINE_list("baseline_sizes_mb", ["2.2", "22"], "Sizes on which to also time bench/original_baseline.py.")
flags.DEFINE_list("beam_workers", [], "Runs with --runner=beam on the DirectRunner, with this many worker processes.")
flags.DEFINE_integer("dupe_factor", 2, "")
flags.DEFINE_integer("max_seq_length", 128, "")
flags.DEFINE_integer("max_predictions_per_seq", 20, "")
flags.DEFINE_list("document_sentences", ["1", "4"], "Sentences per generated document: the least and the most "
                  "(1-4: the anchor corpus; long documents fill seq 512 as Wikipedia's articles do).")
flags.DEFINE_integer("rounds", 1, "Runs every configuration this many times, in turns (a shared host's load varies).")
flags.DEFINE_boolean("smoke", False, "A 0.1 MB corpus, one process and the original: checks that the bench runs.")

SMOKE = {"sizes_mb": ["0.1"], "workers": ["1"], "baseline_sizes_mb": ["0.1"], "dupe_factor": 1, "beam_workers": ["1"]}


def make_corpus(path, megabytes, seed=0, document_sentences=(1, 4)):
    with open(os.path.join(REPO, "data", "corpus.txt"), encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    rng = random.Random(seed)
    target, size = megabytes * 1e6, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            doc = "\n".join(rng.choice(sentences) for _ in range(rng.randint(*document_sentences))) + "\n\n"
            f.write(doc)
            size += len(doc.encode("utf-8"))


def _peaks_kb(root, peaks):
    """Records in `peaks` (pid -> kB) the peak RSS (VmHWM) of `root` and every process below it."""
    children = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    waiting = [root]
    while waiting:
        pid = waiting.pop()
        waiting += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"resource_tracker" in f.read():  # multiprocessing's helper, not a worker
                    continue
            with open(f"/proc/{pid}/status") as f:
                peaks[pid] = max(peaks.get(pid, 0), int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)))
        except (OSError, AttributeError):
            continue


def _timed(command):
    """Runs `command`; returns (wall seconds, its output, peak RSS MB of its own process and of the
    largest process it started (0 when none), CPU seconds of all of them)."""
    start, cpu = time.perf_counter(), _children_cpu()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": REPO},  # bert_tf from this checkout
    )
    peaks, log = {}, []
    reader = threading.Thread(target=lambda: log.append(process.stdout.read()))
    reader.start()
    while process.poll() is None:  # VmHWM is kept to the end: polling misses only a process's last moments
        _peaks_kb(process.pid, peaks)
        time.sleep(0.2)
    reader.join()
    wall = time.perf_counter() - start
    if process.returncode:
        raise SystemExit(log[0][-3000:])
    own = peaks.pop(process.pid, 0)
    return wall, log[0], own / 1024, max(peaks.values(), default=0) / 1024, _children_cpu() - cpu


def _children_cpu():
    """User + system seconds of the ended child processes (and theirs): unlike wall time, what a
    run costs hardly changes with the other work on a shared host."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(corpus, setting, out_dir):
    """A run of the script: `setting` "W" or "W/C" (W local workers, pinned to C cores) or
    "beam=W" (the DirectRunner with W workers)."""
    runner = ["--noprogress"]
    if setting.startswith("beam="):
        workers = int(setting[len("beam="):])
        mode = "multi_processing" if workers > 1 else "in_memory"
        runner += ["--runner=beam", f"--beam_pipeline_options=--runner=DirectRunner --direct_num_workers={workers} "
                   f"--direct_running_mode={mode}"]
        pin = []
    else:
        workers, _, cores = setting.partition("/")
        runner.append(f"--num_workers={workers}")
        pin = ["taskset", "-c", ",".join(map(str, range(int(cores))))] if cores else []
    wall, log, main_mb, worker_mb, cpu = _timed(pin + [
        sys.executable,
        os.path.join(REPO, "run_scripts", "create_pretraining_data.py"),
        f"--input_file={corpus}",
        f"--output_file={os.path.join(out_dir, 'a.tfrecord')},{os.path.join(out_dir, 'b.tfrecord')}",
        f"--vocab_file={os.path.join(REPO, 'data', 'vocab.txt')}",
        f"--dupe_factor={FLAGS.dupe_factor}",
        f"--max_seq_length={FLAGS.max_seq_length}",
        f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}",
        *runner,
    ])
    instances = int(re.search(r"Instances: (\d+)", log).group(1))
    own = float(re.search(r"Wrote \d+ file\(s\) in ([\d.]+) s", log).group(1))
    return wall, own, instances, main_mb, worker_mb, cpu


def baseline(corpus, out_dir):
    wall, log, main_mb, _, cpu = _timed([
        sys.executable, os.path.join(REPO, "bench", "original_baseline.py"), corpus,
        os.path.join(REPO, "data", "vocab.txt"), os.path.join(out_dir, "baseline.tfrecord"), str(FLAGS.dupe_factor),
    ])
    found = re.search(r"BASELINE instances=(\d+) own_seconds=([\d.]+)", log)
    return wall, float(found.group(2)), int(found.group(1)), main_mb, 0, cpu


def main(argv):
    del argv
    if FLAGS.smoke:
        for name, value in SMOKE.items():
            setattr(FLAGS, name, value)
    if FLAGS.baseline_sizes_mb and (FLAGS.max_seq_length, FLAGS.max_predictions_per_seq) != (128, 20):
        raise SystemExit("the baseline is written for --max_seq_length=128 --max_predictions_per_seq=20")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'corpus':>9} {'run':>13} {'wall s':>7} {'instances':>9} {'inst/s wall':>11} {'inst/s own':>10} "
              f"{'main MB':>7} {'worker MB':>9} {'CPU s':>6} {'load':>5}")
        for size in map(float, FLAGS.sizes_mb):
            corpus = os.path.join(tmp, f"corpus_{size}.txt")
            make_corpus(corpus, size, document_sentences=tuple(map(int, FLAGS.document_sentences)))
            rates, cpu_rates = {}, {}
            runs = [f"workers={s}" for s in FLAGS.workers] + [f"beam={w}" for w in FLAGS.beam_workers]
            if str(size) in map(str, map(float, FLAGS.baseline_sizes_mb)):
                runs.append("original")
            for name in [name for _ in range(FLAGS.rounds) for name in runs]:
                out = tempfile.mkdtemp(dir=tmp)
                if name == "original":
                    wall, own, instances, main_mb, worker_mb, cpu = baseline(corpus, out)
                else:
                    wall, own, instances, main_mb, worker_mb, cpu = run(corpus, name.removeprefix("workers="), out)
                rates.setdefault(name, []).append(instances / own)
                cpu_rates.setdefault(name, []).append(instances / cpu)
                worker = f"{worker_mb:.0f}" if worker_mb else "-"
                # The host's 1-minute load average as the run ends: other work on a shared machine.
                print(f"{size:>7.1f}MB {name:>13} {wall:>7.1f} {instances:>9} {instances / wall:>11.0f} "
                      f"{instances / own:>10.0f} {main_mb:>7.0f} {worker:>9} {cpu:>6.0f} {os.getloadavg()[0]:>5.1f}",
                      flush=True)
                shutil.rmtree(out)
            _ratios(size, rates, cpu_rates)
        print("anchor (the original, issue text): 2.2 MB, 1 process, ~38,000 instances in 11-13 s wall "
              "(~3,200 instances/s), 650 MB RSS")


def _ratios(size, rounds, cpu_rounds):
    """The ratios of the medians of each configuration's rounds."""
    rates = {name: statistics.median(values) for name, values in rounds.items()}
    per_cpu = {name: statistics.median(values) for name, values in cpu_rounds.items()}
    one = rates.get("workers=1")
    if one and "original" in rates:
        print(f"{size:>7.1f}MB one process / original (own time): {one / rates['original']:.1f}x")
    if "workers=1/1" in rates and "workers=2" in rates:
        print(f"{size:>7.1f}MB 2 workers on 2 cores / 1 worker on 1 core: "
              f"{rates['workers=2'] / rates['workers=1/1']:.2f}x")
    for name in rates:
        local = f"workers={name.removeprefix('beam=')}"
        if name.startswith("beam=") and local in rates:
            print(f"{size:>7.1f}MB {name} / {local} (own time): {rates[name] / rates[local]:.2f}x; "
                  f"instances per CPU second: {per_cpu[name] / per_cpu[local]:.2f}x")


if __name__ == "__main__":
    app.run(main)
