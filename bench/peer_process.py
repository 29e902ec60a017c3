"""A peer measured in a process of its own, for the benches that time PyTorch beside us (fine-tuning,
pre-training): TensorFlow's and torch's thread pools in one process compete for the cores (the
fine-tuning peer's single-sentence rate fell from 159 to 12-15 examples/s beside our loop), so the
bench starts the peer's script once, warmed up, and asks it for a measurement at its turn in each
round while our side waits.

The protocol, both ends here: the bench writes the peer's spec as JSON and starts
`python bench/<peer script> SPEC.json` (`start`); the peer builds its step, runs its warm-up, prints
"ready", then answers each "measure" line on stdin with the rate of `spec["steps"]` steps of
`spec["batch_size"]` examples (a "profile" line with where their time went, as JSON: a step that
marks its phases for bench/step_profile.py), and exits at the end of stdin (`serve`). A spec with "variants"
({key: what differs from the spec}: another padding, dtype or text) has one step built for each in
the one process (torch and transformers imported once), and "measure KEY" measures one of them;
they take their turns one at a time, so they never compete for the cores.
"""

import collections
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))


def missing_pytorch():
    """The names of torch and transformers that this process could not import (looked up, not
    imported: torch's thread pools stay out of the bench's own process)."""
    return [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]


def start(script, spec, directory, processes, name):
    """A function returning the peer's rate once per call, from `bench/<script>` started on `spec`
    (written into `directory`) and warmed up; with spec["variants"], the function takes the key of
    the variant to measure; with request="profile", it returns the profile of its steps instead
    (`serve`). `processes`: an ExitStack that ends the process (its input closed, it
    exits). `name` goes into the error if the peer does not start."""
    handle, spec_path = tempfile.mkstemp(dir=directory, prefix="peer-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    # torch's OpenMP threads spin while they wait (libgomp's active policy): on a machine with more
    # runnable threads than cores a spinning thread holds the core its partner needs, and the
    # fine-tuning peer's rate fell from 47-103 to 8-9 examples/s (L=4 H=256, 2 cores at load 7);
    # passive waiting, unless set otherwise.
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    peer = processes.enter_context(subprocess.Popen(
        [sys.executable, os.path.join(BENCH, script), spec_path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    ))
    first = peer.stdout.readline()
    if first.strip() != "ready":
        peer.kill()  # alive and waiting on its input, it would never end by itself
        raise RuntimeError(f"the {name} peer did not start: it said {first.strip()!r} instead of 'ready', exit "
                           f"status {peer.wait()} (its stderr above)")

    def measure(variant=None, request="measure"):
        peer.stdin.write(request + ("\n" if variant is None else f" {variant}\n"))
        peer.stdin.flush()
        line = peer.stdout.readline()
        if not line:
            raise RuntimeError(f"the {name} peer ended with exit status {peer.wait()} (its stderr above)")
        return json.loads(line) if request == "profile" else float(line)

    return measure


def serve(build):
    """The peer's side, run by its script as `serve(build)`: reads the spec named on the command line
    (its `peer_dirs` folders put on sys.path, after the interpreter's own packages, as the benches do),
    sets torch to spec["threads"] threads (intra- and inter-op, torch's documented knobs, the count
    ours uses), builds `run = build(spec, torch, transformers)` (`run(steps)` trains that many steps;
    its warm-up done) for the spec or each of its variants, prints "ready", then one rate per
    "measure" ("measure KEY") line, or one JSON line per "profile" ("profile KEY") line (`profiled`),
    until stdin ends."""
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    sys.path.extend(spec["peer_dirs"])
    import torch
    import transformers

    torch.set_num_threads(spec["threads"])
    torch.set_num_interop_threads(spec["threads"])
    variants = spec.pop("variants", None)
    if variants is None:
        runs = {"": build(spec, torch, transformers)}
    else:
        runs = {key: build({**spec, **changes}, torch, transformers) for key, changes in variants.items()}
    print("ready", flush=True)
    for line in sys.stdin:
        request, _, key = line.strip().partition(" ")
        run = runs.get(key) if request in ("measure", "profile") else None
        if run is None:
            raise SystemExit(f"unknown request {line.strip()!r}")
        if request == "profile":
            print(json.dumps(profiled(run, spec["steps"], torch)), flush=True)
            continue
        start_time = time.perf_counter()
        run(spec["steps"])
        print(spec["steps"] * spec["batch_size"] / (time.perf_counter() - start_time), flush=True)


def profiled(run, steps, torch):
    """`{"categories": ..., "wall": ms, "profiled": ms, "largest": [[op, ms], ...]}` per step:
    `run(steps)` timed, then `run(steps)` again under torch's profiler (bench/step_profile.py's
    categories; the step marks its phases) and timed with it; "largest": its other ops that take the
    most time (`step_profile.largest`)."""
    import step_profile  # bench/, this script's folder

    start_time = time.perf_counter()
    run(steps)
    wall = 1000 * (time.perf_counter() - start_time) / steps
    start_time = time.perf_counter()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run(steps)
    profiled_wall = 1000 * (time.perf_counter() - start_time) / steps
    by_op = collections.Counter()
    categories = step_profile.torch_profile(profile.events(), steps, by_op)
    return {"categories": categories, "wall": wall, "profiled": profiled_wall, "largest": step_profile.largest(by_op)}
