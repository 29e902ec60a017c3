"""The fine-tuning search of the paper (Appendix A.3): every combination of learning rates, batch
sizes and epochs, each with random restarts, trained and evaluated in its own subfolder of the
output folder; the best by the task's dev metric is chosen.

What a search leaves in its folder:
- one run folder per combination and restart (`lr3e-05_bs32_ep3_r0`), each a complete run
  (checkpoints, run record, eval_results.txt) that exports and conversions take as any other;
- search.json: the random seed, the settings every run shares (`settings`: all but the grid's
  values that change what a run learns, e.g. max_seq_length, the LoRA rank) and every run of the
  search (written before the first run; put back as it was when the search fails before any
  run it added leaves anything in its folder);
- search_results.csv and search_results.md: every finished run, best first, the chosen one
  marked (rewritten atomically after each run);
- best: a relative link to the chosen run's folder (a copy where links cannot be made).

A run whose training diverges (its loss or weights NaN or Inf) leaves diverged.json in its folder
and the search goes on: it is ranked last (its figure NaN, as a finished run's whose dev figures
hold a NaN or an Inf), and not run again while that file is there. A search whose every run
diverged chooses none: an error.

A search killed at any point continues when started again with the same command: a run whose
eval_results.txt exists is finished and not redone (the file is written atomically, after
training); an interrupted run resumes from its own checkpoints. Started again with another grid
on the same folder, the search is extended: the new runs are added to search.json, finished runs
are reused, and the table and the choice cover every run of the folder's search. Its seed
cannot change (the runs' seeds derive from it), nor can its shared settings: a run made with
others would be ranked beside runs it cannot be compared with. A folder whose search.json predates
the shared settings is checked against its finished runs' records (`fine_tuning_task.json`).

Training a run is the caller's `train_and_evaluate(run, run_dir)` (a script's run with the run's values).
Errors are ValueErrors starting with the setting at fault (`learning_rate=...`, `output_dir=...`).
"""

import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import shutil

from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write, owner_tag, read_json_object
from bert_tf.runs import record as run_record
from bert_tf.runs import registry
from bert_tf.training.divergence import DIVERGED_FILE, read_divergence, record_divergence

RECORD_FILE = run_record.SEARCH_FILE
TABLE_FILES = ("search_results.csv", "search_results.md")
BEST = run_record.BEST
# The dev figure a run is judged by, as GLUE and the paper report each task: the first of these
# its eval_results.txt has. CoLA: Matthews correlation; STS-B: Pearson; MRPC, QQP: F1 of class 1;
# NER: conlleval's entity F1 (eval_f1); SQuAD: the official F1 (f1); multi-label: micro F1;
# every other classifier (MNLI: its matched set) and SWAG: accuracy.
METRICS = ("eval_mcc", "eval_pearson", "eval_f1", "f1", "eval_micro_f1", "eval_accuracy")
_EVAL_RESULTS = "eval_results.txt"
# The shared settings a run record keeps as a script's flag gives them (an older search.json's
# runs are checked on these).
_RECORDED = ("do_lower_case", "max_seq_length", "lora_rank", "lora_alpha", "group_by_length")


@dataclasses.dataclass(frozen=True)
class SearchRun:
    """One run of a search: a combination of the grid and a restart, with its seed."""

    learning_rate: float
    train_batch_size: int
    num_train_epochs: float
    restart: int
    seed: int

    @property
    def name(self):
        """Its folder's name: `lr3e-05_bs32_ep3_r0`."""
        return (
            f"lr{self.learning_rate:g}_bs{self.train_batch_size}_ep{self.num_train_epochs:g}_r{self.restart}"
        )


def parse_values(setting, text, kind):
    """The comma-separated values of `text` (e.g. "5e-5,3e-5"), or the values of a tuple or list,
    as a tuple of `kind` (int or float), none twice. A number passes as itself."""
    if isinstance(text, (int, float)):
        items = [text]
    else:
        items = list(text) if isinstance(text, (tuple, list)) else str(text).split(",")
    if not items:
        raise ValueError(f"{shown(setting)}={text!r}: give at least one value")
    values = []
    for item in items:
        try:
            value = kind(item.strip()) if isinstance(item, str) else kind(item)
        except ValueError:
            wanted = "an integer" if kind is int else "a number"
            raise ValueError(f"{shown(setting)}={text}: {str(item).strip()!r} is not {wanted}") from None
        if value in values:
            raise ValueError(f"{shown(setting)}={text}: {value:g} is given twice")
        values.append(value)
    return tuple(values)


def grid(learning_rates, train_batch_sizes, num_train_epochs, restarts, seed):
    """Every run of the grid, in order (learning rate, then batch size, then epochs, then
    restart); the values as `parse_values` takes them. Restart r trains with seed + r: restart 0
    with `seed` itself, and each combination's restarts with the same seeds, so that
    combinations differ only by their values. A search's values must all be finite and positive
    before any run starts; one run's are the loop settings' to check, as before searches."""
    if restarts < 1:
        raise ValueError(f"{shown.restarts}={restarts}: must be at least 1")
    texts = dict(learning_rate=learning_rates, train_batch_size=train_batch_sizes, num_train_epochs=num_train_epochs)
    values = {name: parse_values(name, text, int if name == "train_batch_size" else float)
              for name, text in texts.items()}
    runs = [
        SearchRun(lr, size, epoch, r, seed + r)
        for lr in values["learning_rate"] for size in values["train_batch_size"]
        for epoch in values["num_train_epochs"] for r in range(restarts)
    ]
    for name, found in values.items():
        bad = [value for value in found if not math.isfinite(value) or value <= 0]
        if is_search(runs) and bad:
            raise ValueError(f"{shown(name)}={texts[name]}: {bad[0]:g} is not a positive number (in a search)")
    return runs


def is_search(runs):
    """Whether `runs` (from `grid`) are a search, not one run as before searches existed."""
    return len(runs) > 1


def check_not_search_folder(output_dir):
    """For one run: `output_dir` must not hold a search (its runs are in subfolders)."""
    if run_record.is_search(output_dir):
        raise ValueError(
            f"{shown.output_dir}={output_dir} holds a search ({RECORD_FILE}): give its lists again to continue it, "
            f"or {shown.output_dir}={os.path.join(output_dir, BEST)} to use its chosen run"
        )


def check_not_search_run(output_dir):
    """For one run that trains: `output_dir` must not be a run of a search (its `best`, or one of
    its run folders): training it further would leave the search's table naming a run that no
    longer exists, and change the run its `best` stands for."""
    for folder in (os.path.abspath(output_dir), os.path.realpath(output_dir)):
        search_dir = os.path.dirname(folder)
        if run_record.is_search(search_dir):
            raise ValueError(
                f"{shown.output_dir}={output_dir} is a run of the search in {search_dir} ({RECORD_FILE}): "
                f"training it further "
                f"would change a run its table ranks. Train a copy (cp -rL {output_dir} NEW, "
                f"{shown.output_dir}=NEW), or "
                f"continue the search with more values ({shown.num_train_epochs}=1,3)"
            )


def prepare(output_dir, runs, seed, settings=None):
    """Checks that `output_dir` holds nothing (no other program's model above all), or a search
    with the same seed and shared `settings` (a JSON-able dict, name -> value, of what every run
    shares), and writes search.json with its runs and `runs` (the search extended). Returns every
    run of the search, earlier ones first."""
    path = os.path.join(output_dir, RECORD_FILE)
    run_record.check_not_other_model(output_dir, ours=os.path.isfile(path) or run_record.read(output_dir) is not None)
    if not os.path.isfile(path) and os.path.isdir(output_dir):
        single = run_record.read(output_dir) is not None or os.path.isfile(os.path.join(output_dir, "checkpoint"))
        if single:
            raise ValueError(f"{shown.output_dir}={output_dir} holds a single run, not a search: use another "
                             f"{shown.output_dir}")
    earlier = []
    if os.path.isfile(path):
        found = read_json_object(path)
        if found.get("random_seed") != seed:
            raise ValueError(
                f"{shown.random_seed}={seed}, but the search in {shown.output_dir}={output_dir} has "
                f"{shown.random_seed} "
                f"{found.get('random_seed')} (its runs' seeds derive from it): give the same, or use another "
                f"{shown.output_dir}"
            )
        try:
            earlier = [SearchRun(**run) for run in found["runs"]]
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a search record ({e})") from None
        settings = _same_settings(output_dir, found.get("settings"), settings or {}, earlier)
    known = {run.name for run in earlier}
    every = earlier + [run for run in runs if run.name not in known]
    record = {"random_seed": seed, "settings": settings or {}, "runs": [dataclasses.asdict(run) for run in every]}
    with atomic_write(path) as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    return every


def _same_settings(output_dir, recorded, settings, earlier):
    """The shared settings to record for a search continued in `output_dir` with `settings`: a
    ValueError naming the first that differs from `recorded` (search.json's) or, where search.json
    has none (written before it kept them), from a record of its `earlier` runs. A setting that
    only one side has is kept as the other side gives it."""
    if recorded is None:
        recorded = {}
        for run in earlier:
            found = run_record.read(os.path.join(output_dir, run.name))
            if found is not None:
                recorded = {name: getattr(found, name) for name in _RECORDED if name in settings}
                break
    for name, value in settings.items():
        if name in recorded and not _equal(recorded[name], value):
            raise ValueError(
                f"{shown(name)}={value}, but the search in {shown.output_dir}={output_dir} was run with "
                f"{shown(name)}={recorded[name]} "
                f"(its runs would be ranked with runs made otherwise): give the same, or use another {shown.output_dir}"
            )
    return {**recorded, **settings}


def _equal(a, b):
    """Values as JSON keeps them: a tuple read back is a list, an integral float may be an int."""
    a, b = (list(v) if isinstance(v, tuple) else v for v in (a, b))
    return a == b


def read_results(run_dir):
    """A finished run's eval_results.txt as {key: float}, or None when there is none yet."""
    path = os.path.join(run_dir, _EVAL_RESULTS)
    if not os.path.isfile(path):
        return None
    results = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.strip().partition(" = ")
            with contextlib.suppress(ValueError):
                results[key] = float(value)
    return results


def headline_metric(results, source):
    """`(name, value)` of the first of METRICS, then of the task kinds' own `dev_metrics`, in
    `results`; `source` names the file otherwise."""
    names = METRICS + tuple(name for kind in registry.KINDS.values() for name in kind.dev_metrics)
    for name in names:
        if name in results:
            return name, results[name]
    raise ValueError(f"{source}: none of the dev metrics a search chooses by ({', '.join(names)})")


@dataclasses.dataclass(frozen=True)
class Row:
    """A finished run: its dev figure `metric` = `value` at `global_step`, in `run_dir`."""

    run: SearchRun
    run_dir: str
    metric: str
    value: float
    global_step: int


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """Every finished run, best first (ties: the earlier in the grid), and how `best` was made
    ("link" or "copy")."""

    rows: tuple
    best_as: str

    @property
    def chosen(self):
        return self.rows[0]


def search(output_dir, runs, seed, train_and_evaluate, log=None, settings=None):
    """The search of `runs` (from `grid` with `seed`) in `output_dir`, every run sharing
    `settings` (see `prepare`): `prepare`, then `run_search`. `log(message)` hears of each run
    started and of the choice."""
    log = log or (lambda message: None)
    created, path = not os.path.exists(output_dir), os.path.join(output_dir, RECORD_FILE)
    before = _text(path) if os.path.isfile(path) else None
    every = prepare(output_dir, runs, seed, settings)
    try:
        done = run_search(output_dir, every, train_and_evaluate, log)
    except BaseException:  # a script's one-line error is a SystemExit
        _undo_if_nothing_ran(output_dir, every, before, created)
        raise
    chosen, best, table_file = done.chosen, os.path.join(output_dir, BEST), os.path.join(output_dir, TABLE_FILES[1])
    diverged = sum(row.metric is None for row in done.rows)
    non_finite = sum(row.metric is not None and math.isnan(row.value) for row in done.rows)
    log(f"{chosen.run.name} chosen ({chosen.metric} = {chosen.value:.6g}, best of {len(done.rows)} runs"
        f"{f', {diverged} diverged' if diverged else ''}"
        f"{f', {non_finite} with a NaN or an Inf in its dev figures' if non_finite else ''}); "
        f"{best} {'links to' if done.best_as == 'link' else 'is a copy of'} it; table: {table_file}")
    return done


def _text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _undo_if_nothing_ran(output_dir, runs, before, created):
    """After a failed search: its search.json put back as it was before (`before`: its text; None:
    there was none, then removed, and `output_dir` too when `created` for it and empty) if none of
    the runs it added left anything in its folder, as when a run's inputs cannot be read or its
    values give no training step. The corrected command then starts afresh, or continues the
    search as it was, instead of being refused for the failed settings or failing on its runs again."""
    earlier = {SearchRun(**run).name for run in json.loads(before)["runs"]} if before else set()
    added = [os.path.join(output_dir, run.name) for run in runs if run.name not in earlier]  # their folders
    if any(os.path.isdir(folder) and os.listdir(folder) for folder in added):
        return
    for folder in added:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    path = os.path.join(output_dir, RECORD_FILE)
    if before is not None:
        with atomic_write(path) as f:
            f.write(before)
        return
    with contextlib.suppress(OSError):
        os.remove(path)
    if created:
        with contextlib.suppress(OSError):
            os.rmdir(output_dir)  # only if empty


def run_search(output_dir, runs, train_and_evaluate, log=None):
    """Trains and evaluates each of `runs` that has no dev figures yet in `output_dir/<name>`
    (`train_and_evaluate(run, run_dir)`, which must leave eval_results.txt there); after each,
    writes the table. A run that diverges is recorded as such (module docstring). Then links
    `best` to the chosen run. `log(message)` hears of each run started. Returns the SearchResult."""
    log = log or (lambda message: None)
    rows = []
    for index, run in enumerate(runs):
        run_dir = os.path.join(output_dir, run.name)
        results, diverged = read_results(run_dir), read_divergence(run_dir)
        if results is None and diverged is not None:
            log(f"run {index + 1} of {len(runs)}, {run.name}: diverged before (its {DIVERGED_FILE}), not run again")
        if results is None and diverged is None:
            log(f"run {index + 1} of {len(runs)}, {run.name}{' (resumed)' if os.path.isdir(run_dir) else ''}")
            try:
                train_and_evaluate(run, run_dir)
            except BaseException as e:
                diverged = record_divergence(run_dir, e)
                log(f"{run.name} diverged ({diverged['message']}): ranked last, and not run again while "
                    f"{os.path.join(run_dir, DIVERGED_FILE)} exists")
            else:
                results = read_results(run_dir)
                if results is None:
                    raise ValueError(
                        f"{run_dir}: no {_EVAL_RESULTS} after training and evaluation: a search chooses by dev "
                        f"figures, it needs a dev set with labels (SQuAD: a predict file with answers)"
                    )
        rows = ranked([*rows, _row(run, run_dir, results, diverged)])
        write_table(output_dir, rows)
    if math.isnan(rows[0].value):
        raise ValueError(
            f"{shown.output_dir}={output_dir}: every run of the search diverged (each folder's {DIVERGED_FILE} or "
            f"{_EVAL_RESULTS} says where): continue it with lower values in {shown.learning_rate} (two or more, or "
            f"{shown.restarts}), or start afresh in another {shown.output_dir}"
        )
    return SearchResult(tuple(rows), link_best(output_dir, rows[0].run.name))


def _row(run, run_dir, results, diverged):
    """The table's row of a run: a diverged one, or one whose dev figures hold a NaN or an Inf
    (its weights overflowed without a NaN in training), has the value NaN (ranked last)."""
    if results is None:
        return Row(run, run_dir, None, math.nan, diverged["step"])
    metric, value = headline_metric(results, os.path.join(run_dir, _EVAL_RESULTS))
    if not all(math.isfinite(v) for v in results.values()):
        value = math.nan
    return Row(run, run_dir, metric, value, int(results.get("global_step", 0)))


def ranked(rows):
    """Best first by value (a NaN last); ties keep the grid's order."""
    return sorted(rows, key=lambda row: -row.value if not math.isnan(row.value) else math.inf)


def table(rows):
    """`(header, lines)` of the table: one line per row, the first (the chosen) marked."""
    metric = next((row.metric for row in rows if row.metric), "dev_metric")
    header = ["run", "learning_rate", "train_batch_size", "num_train_epochs", "restart", "seed", metric,
              "global_step", "chosen"]
    lines = [
        [row.run.name, f"{row.run.learning_rate:g}", row.run.train_batch_size, f"{row.run.num_train_epochs:g}",
         row.run.restart, row.run.seed, f"{row.value:.6g}", row.global_step,
         "*" if i == 0 and not math.isnan(row.value) else ""]
        for i, row in enumerate(rows)
    ]
    return header, lines


def write_table(output_dir, rows):
    """search_results.csv and a Markdown copy (search_results.md), each written atomically."""
    header, lines = table(rows)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(lines)
    markdown = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
    markdown += [f"| {' | '.join(str(v) for v in line)} |" for line in lines]
    for name, content in zip(TABLE_FILES, (text.getvalue(), "\n".join(markdown) + "\n"), strict=True):
        with atomic_write(os.path.join(output_dir, name)) as f:
            f.write(content)


def link_best(output_dir, name):
    """Points output_dir/best at the run folder `name`: a relative symbolic link, or where one
    cannot be made a copy of the folder. Replaced in one rename, so that `best` is always a
    whole run. Returns "link" or "copy"."""
    best = os.path.join(output_dir, BEST)
    tmp = os.path.join(output_dir, f".{BEST}.{owner_tag()}.tmp")
    _remove(tmp)
    try:
        os.symlink(name, tmp, target_is_directory=True)
        made = "link"
    except OSError:  # a file system or platform without symbolic links
        shutil.copytree(os.path.join(output_dir, name), tmp, symlinks=True)
        made = "copy"
    if os.path.isdir(best) and not os.path.islink(best):
        shutil.rmtree(best)  # an earlier copy: a rename cannot replace a folder that is not empty
    os.replace(tmp, best)
    return made


def _remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
