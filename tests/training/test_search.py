"""The fine-tuning search (paper Appendix A.3) without a model: a stand-in `train_and_evaluate`
writes each run's eval_results.txt from a hand-made table of figures, so that the grid, the
seeds, the choice, the table, the `best` link and the resume are checked against that table."""

import csv
import json
import os

import pytest

from bert_tf.training import search
from bert_tf.training.divergence import Diverged

# The stand-in's dev figures, by (learning rate, seed): the best is 3e-05 with restart 1.
FIGURES = {(5e-5, 12345): 0.61, (5e-5, 12346): 0.64, (3e-5, 12345): 0.58, (3e-5, 12346): 0.70}


class Interrupted(Exception):
    """What a kill is to the search: the run stops where it is."""


def _stand_in(calls, interrupt_at=None, metrics=None):
    """A `train_and_evaluate` that records its calls and writes eval_results.txt as the trainer
    does (`key = value`), with FIGURES' value as `metrics`' first key (default eval_accuracy)."""

    def train_and_evaluate(run, run_dir):
        calls.append(run.name)
        os.makedirs(run_dir, exist_ok=True)
        if len(calls) == interrupt_at:  # killed while training: a checkpoint, no dev figures
            open(os.path.join(run_dir, "checkpoint"), "w").close()
            raise Interrupted()
        value = FIGURES[(run.learning_rate, run.seed)]
        lines = {name: value for name in (metrics or ("eval_accuracy",))}
        lines["eval_loss"], lines["global_step"] = 1.0 - value, 8
        with open(os.path.join(run_dir, "eval_results.txt"), "w") as f:
            f.writelines(f"{k} = {v}\n" for k, v in sorted(lines.items()))

    return train_and_evaluate


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_the_grid_names_seeds_and_orders_every_run():
    runs = search.grid("5e-5,3e-5", "32", "3", 2, 12345)
    assert [run.name for run in runs] == [
        "lr5e-05_bs32_ep3_r0", "lr5e-05_bs32_ep3_r1", "lr3e-05_bs32_ep3_r0", "lr3e-05_bs32_ep3_r1",
    ]
    assert [run.seed for run in runs] == [12345, 12346, 12345, 12346]
    assert search.is_search(runs)
    # One value each and one restart: one run with the flags' own values and seed, not a search.
    (one,) = search.grid("2e-5", "16", "2.5", 1, 7)
    assert (one.learning_rate, one.train_batch_size, one.num_train_epochs, one.seed) == (2e-5, 16, 2.5, 7)
    assert isinstance(one.train_batch_size, int) and not search.is_search([one])
    assert [r.name for r in search.grid(5e-5, 32, 3.0, 1, 0)] == ["lr5e-05_bs32_ep3_r0"]  # numbers pass as such
    # One run's values are checked by the loop's settings, with their words, as before searches.
    assert search.grid("-1", "0", "0", 1, 0)[0].learning_rate == -1.0


@pytest.mark.parametrize("values, message", [
    (("5e-5,abc", "32", "3", 1), "learning_rate=5e-5,abc: 'abc' is not a number"),
    (("5e-5", "32,16.5", "3", 1), "train_batch_size=32,16.5: '16.5' is not an integer"),
    (("5e-5", "32", "3,0", 1), "num_train_epochs=3,0: 0 is not a positive number (in a search)"),
    (("-1e-5", "32", "3", 2), "learning_rate=-1e-5: -1e-05 is not a positive number (in a search)"),
    (("nan,1e-5", "32", "3", 1), "learning_rate=nan,1e-5: nan is not a positive number (in a search)"),
    (("5e-5,3e-5", "0", "3", 1), "train_batch_size=0: 0 is not a positive number (in a search)"),
    (("5e-5,", "32", "3", 1), "learning_rate=5e-5,: '' is not a number"),
    (("5e-5,0.00005", "32", "3", 1), "learning_rate=5e-5,0.00005: 5e-05 is given twice"),
    (("5e-5", "32", "3", 0), "restarts=0: must be at least 1"),
])
def test_bad_values_are_refused_naming_the_setting(values, message):
    with pytest.raises(ValueError) as e:
        search.grid(*values, 12345)
    assert str(e.value) == message


@pytest.mark.parametrize("keys, chosen", [
    (("eval_accuracy", "eval_mcc", "eval_loss"), "eval_mcc"),  # CoLA
    (("eval_accuracy", "eval_f1", "eval_loss"), "eval_f1"),  # MRPC, QQP
    (("eval_pearson", "eval_spearman", "eval_loss"), "eval_pearson"),  # STS-B
    (("eval_accuracy", "eval_mismatched_accuracy", "eval_loss"), "eval_accuracy"),  # MNLI: matched
    (("eval_accuracy", "eval_f1", "eval_precision", "eval_PER_f1"), "eval_f1"),  # NER: entity F1
    (("exact_match", "f1", "global_step"), "f1"),  # SQuAD v1.1
    (("exact", "f1", "HasAns_f1", "NoAns_f1"), "f1"),  # SQuAD v2.0
    (("eval_accuracy", "eval_loss", "loss"), "eval_accuracy"),  # SWAG and other classifiers
    (("recall_at_1", "recall_at_10", "mrr_at_10", "eval_loss"), "mrr_at_10"),  # sentence embeddings: retrieval
    (("spearman", "pearson", "global_step"), "spearman"),  # sentence embeddings: STS-style pairs
])
def test_each_task_is_judged_by_the_figure_glue_and_the_paper_report(keys, chosen):
    results = {key: float(i) for i, key in enumerate(keys)}
    assert search.headline_metric(results, "x") == (chosen, results[chosen])
    with pytest.raises(ValueError, match="^x: none of the dev metrics"):
        search.headline_metric({"loss": 1.0}, "x")


def test_a_2x1x1_grid_with_two_restarts_chooses_the_best_writes_the_table_and_links_it(tmp_path):
    out, calls = tmp_path / "out", []
    runs = search.grid("5e-5,3e-5", "32", "3", 2, 12345)
    messages = []
    done = search.search(str(out), runs, 12345, _stand_in(calls, metrics=("eval_f1", "eval_accuracy")),
                         messages.append)
    assert calls == [run.name for run in runs]
    expected = sorted(runs, key=lambda r: -FIGURES[(r.learning_rate, r.seed)])
    assert [row.run for row in done.rows] == expected and done.chosen.run.name == "lr3e-05_bs32_ep3_r1"
    rows = _csv(out / "search_results.csv")
    assert [r["run"] for r in rows] == [r.name for r in expected]
    assert [float(r["eval_f1"]) for r in rows] == sorted(FIGURES.values(), reverse=True)
    assert [r["chosen"] for r in rows] == ["*", "", "", ""]
    assert rows[0]["seed"] == "12346" and rows[0]["learning_rate"] == "3e-05" and rows[0]["global_step"] == "8"
    markdown = (out / "search_results.md").read_text().splitlines()
    assert markdown[0].startswith("| run | learning_rate |") and len(markdown) == 2 + 4
    assert markdown[2].startswith("| lr3e-05_bs32_ep3_r1 |") and markdown[2].endswith("| * |")
    # `best` is a relative link: the folder moves with it.
    assert os.readlink(out / "best") == "lr3e-05_bs32_ep3_r1" and done.best_as == "link"
    assert (out / "best" / "eval_results.txt").read_text().startswith("eval_accuracy = 0.7")
    record = json.loads((out / "search.json").read_text())
    assert record["random_seed"] == 12345 and len(record["runs"]) == 4
    assert "lr3e-05_bs32_ep3_r1 chosen (eval_f1 = 0.7, best of 4 runs)" in messages[-1]


def test_a_killed_search_continues_where_it_stopped_and_a_new_grid_extends_it(tmp_path):
    out, calls = tmp_path / "out", []
    runs = search.grid("5e-5,3e-5", "32", "3", 2, 12345)
    with pytest.raises(Interrupted):
        search.search(str(out), runs, 12345, _stand_in(calls, interrupt_at=3))
    assert calls == [r.name for r in runs[:3]] and not (out / "best").exists()
    assert len(_csv(out / "search_results.csv")) == 2  # the finished runs, written as they finished

    again, messages = [], []
    done = search.search(str(out), runs, 12345, _stand_in(again), messages.append)
    assert again == [r.name for r in runs[2:]]  # finished runs are not redone
    assert messages[:2] == ["run 3 of 4, lr3e-05_bs32_ep3_r0 (resumed)", "run 4 of 4, lr3e-05_bs32_ep3_r1"]
    assert done.chosen.run.name == "lr3e-05_bs32_ep3_r1" and len(done.rows) == 4

    # Another grid on the same folder extends the search: only its new runs train.
    FIGURES.update({(1e-4, 12345): 0.9})
    try:
        more = []
        done = search.search(str(out), search.grid("1e-4,5e-5", "32", "3", 1, 12345), 12345, _stand_in(more))
    finally:
        del FIGURES[(1e-4, 12345)]
    assert more == ["lr0.0001_bs32_ep3_r0"]
    assert len(done.rows) == 5 and done.chosen.run.name == "lr0.0001_bs32_ep3_r0"
    assert os.readlink(out / "best") == "lr0.0001_bs32_ep3_r0"
    assert len(json.loads((out / "search.json").read_text())["runs"]) == 5


def _diverges_in_the_script(run_dir, step):
    """A run stopped by the loop's Diverged, reported as the scripts report it: a SystemExit (their
    one-line error) raised while handling the library error."""
    from run_scripts.flag_settings import library_call

    os.makedirs(run_dir, exist_ok=True)
    open(os.path.join(run_dir, "checkpoint"), "w").close()  # its last good checkpoint

    def train():
        raise Diverged(f"the loss became nan at step {step}; stopped without saving. The last good checkpoint is X",
                       step)

    library_call(train)


def test_a_run_that_diverges_is_ranked_last_recorded_and_not_run_again(tmp_path):
    """So that one learning rate too high does not stop the search, nor every later run of its command."""
    out, calls, messages = tmp_path / "out", [], []
    runs = search.grid("5e-5,3e-5", "32", "3", 2, 12345)
    finished = _stand_in(calls)

    def train_and_evaluate(run, run_dir):
        if run.name == "lr5e-05_bs32_ep3_r1":
            calls.append(run.name)
            _diverges_in_the_script(run_dir, step=6)
        finished(run, run_dir)
        if run.name == "lr3e-05_bs32_ep3_r1":  # finished, its weights overflowed: the best figure, a NaN loss
            with open(os.path.join(run_dir, "eval_results.txt"), "a") as f:
                f.write("loss = nan\n")

    done = search.search(str(out), runs, 12345, train_and_evaluate, messages.append)
    assert calls == [run.name for run in runs]  # the runs after the diverged one ran
    expected = ["lr5e-05_bs32_ep3_r0", "lr3e-05_bs32_ep3_r0", "lr5e-05_bs32_ep3_r1", "lr3e-05_bs32_ep3_r1"]
    assert [row.run.name for row in done.rows] == expected and os.readlink(out / "best") == expected[0]
    rows = _csv(out / "search_results.csv")
    assert [(r["run"], r["eval_accuracy"], r["global_step"], r["chosen"]) for r in rows] == [
        (expected[0], "0.61", "8", "*"), (expected[1], "0.58", "8", ""), (expected[2], "nan", "6", ""),
        (expected[3], "nan", "8", "")]
    diverged = out / "lr5e-05_bs32_ep3_r1" / "diverged.json"
    message = "the loss became nan at step 6; stopped without saving. The last good checkpoint is X"
    assert json.loads(diverged.read_text()) == {"step": 6, "message": message}
    assert (f"lr5e-05_bs32_ep3_r1 diverged ({message}): ranked last, and not run again while {diverged} exists"
            in messages)
    assert ("lr5e-05_bs32_ep3_r0 chosen (eval_accuracy = 0.61, best of 4 runs, 1 diverged, 1 with a NaN or an Inf "
            "in its dev figures)") in messages[-1]
    # The same command again: nothing trains, the same choice; the diverged run's skip is told.
    again, messages = [], []
    done = search.search(str(out), runs, 12345, _stand_in(again), messages.append)
    assert again == [] and done.chosen.run.name == expected[0] and _csv(out / "search_results.csv") == rows
    assert messages[:-1] == ["run 2 of 4, lr5e-05_bs32_ep3_r1: diverged before (its diverged.json), not run again"]

    # Every run diverged: no choice, an error naming the folder; the same again without training.
    every, tried = tmp_path / "every", []

    def always(run, run_dir):
        tried.append(run.name)
        _diverges_in_the_script(run_dir, step=1)

    for _ in range(2):
        with pytest.raises(ValueError, match=rf"^output_dir={every}: every run of the search diverged \(each "
                                             r"folder's diverged.json or eval_results.txt says where\): continue it "
                                             r"with lower values in learning_rate \(two or more, or restarts\), or "
                                             r"start afresh in another output_dir$"):
            search.search(str(every), runs[:2], 12345, always)
    assert tried == [runs[0].name, runs[1].name] and not (every / "best").exists()
    assert [(r["dev_metric"], r["chosen"]) for r in _csv(every / "search_results.csv")] == [("nan", "")] * 2


def test_a_new_search_whose_first_run_fails_before_training_leaves_nothing(tmp_path):
    """So that the corrected command starts it afresh, instead of being refused for the recorded
    settings of the failed one; a search extended so is as it was. A run that left something stays."""
    runs = search.grid("5e-5,3e-5", "32", "3", 1, 12345)

    def fails_at_its_checks(run, run_dir):
        os.makedirs(run_dir, exist_ok=True)  # at most an empty folder
        raise SystemExit(1)  # a script's one-line error

    new, given = tmp_path / "new", tmp_path / "given"
    given.mkdir()  # made by the user: it stays
    for out in (new, given):
        with pytest.raises(SystemExit):
            search.search(str(out), runs, 12345, fails_at_its_checks, settings={"data_dir": "/typo"})
    assert not new.exists() and os.listdir(given) == []
    calls = []
    done = search.search(str(new), runs, 12345, _stand_in(calls), settings={"data_dir": "/data"})
    assert calls == [r.name for r in runs] and done.chosen.run.name == "lr5e-05_bs32_ep3_r0"
    # Extended by a run that fails so: the record as it was, so that the earlier command continues it.
    before, wider = (new / "search.json").read_text(), search.grid("5e-5,1e-4", "32", "3", 1, 12345)
    with pytest.raises(SystemExit):
        search.search(str(new), wider, 12345, fails_at_its_checks, settings={"data_dir": "/data"})
    assert (new / "search.json").read_text() == before and not (new / "lr0.0001_bs32_ep3_r0").exists()

    killed = tmp_path / "killed"  # its first run stopped after writing a checkpoint: it resumes
    with pytest.raises(Interrupted):
        search.search(str(killed), runs, 12345, _stand_in([], interrupt_at=1))
    with pytest.raises(SystemExit):  # a search continued: its record stays, whatever the run does
        search.search(str(killed), runs, 12345, fails_at_its_checks)
    assert sorted(os.listdir(killed)) == ["lr5e-05_bs32_ep3_r0", "search.json"]


def test_a_folder_of_another_seed_or_a_single_run_is_refused(tmp_path):
    out = tmp_path / "out"
    runs = search.grid("5e-5,3e-5", "32", "3", 1, 12345)
    search.search(str(out), runs, 12345, _stand_in([]))
    with pytest.raises(ValueError, match=rf"^random_seed=1, but the search in output_dir={out} has random_seed 12345"):
        search.prepare(str(out), search.grid("5e-5,3e-5", "32", "3", 1, 1), 1)
    with pytest.raises(ValueError, match=rf"^output_dir={out} holds a search \(search.json\): .*output_dir={out}/best"):
        search.check_not_search_folder(str(out))
    search.check_not_search_folder(str(out / "best"))  # the chosen run is a run folder as any other

    single = tmp_path / "single"
    single.mkdir()
    (single / "checkpoint").write_text("")
    with pytest.raises(ValueError, match=rf"^output_dir={single} holds a single run, not a search"):
        search.prepare(str(single), runs, 12345)


def test_a_search_continued_with_other_shared_settings_is_refused_before_any_run(tmp_path):
    out, calls = tmp_path / "out", []
    runs = search.grid("5e-5,3e-5", "32", "3", 1, 12345)
    shared = {"max_seq_length": 32, "lora_rank": 0, "lora_alpha": None, "warmup_proportion": 0.1}
    search.search(str(out), runs, 12345, _stand_in(calls), settings=shared)
    assert json.loads((out / "search.json").read_text())["settings"] == shared
    more = search.grid("1e-4", "32", "3", 1, 12345)
    for name, value in (("max_seq_length", 64), ("lora_rank", 4), ("warmup_proportion", 0.2)):
        with pytest.raises(ValueError, match=rf"^{name}={value}, but the search in output_dir={out} was run with "
                                             rf"{name}={shared[name]} .*give the same, or use another output_dir"):
            search.search(str(out), more, 12345, _stand_in(calls), settings={**shared, name: value})
    assert len(calls) == 2 and len(json.loads((out / "search.json").read_text())["runs"]) == 2  # nothing ran or changed
    search.prepare(str(out), runs, 12345, settings=shared)  # the same settings continue it

    # A search.json written before it kept the settings: its finished runs' records say them.
    record = {"kind": "classifier", "task_name": "mrpc", "max_seq_length": 32, "labels": ["0", "1"]}
    (out / runs[0].name / "fine_tuning_task.json").write_text(json.dumps(record))
    older = json.loads((out / "search.json").read_text())
    del older["settings"]
    (out / "search.json").write_text(json.dumps(older))
    with pytest.raises(ValueError, match=rf"^max_seq_length=64, but the search in output_dir={out} was run with "
                                         r"max_seq_length=32 "):
        search.prepare(str(out), more, 12345, settings={**shared, "max_seq_length": 64})
    search.prepare(str(out), more, 12345, settings=shared)
    assert json.loads((out / "search.json").read_text())["settings"] == shared


def test_best_is_a_copy_where_links_cannot_be_made_and_a_link_replaces_it_later(tmp_path, monkeypatch):
    out = tmp_path / "out"
    runs = search.grid("5e-5,3e-5", "32", "3", 2, 12345)

    def no_links(*args, **kwargs):
        raise OSError("no symbolic links here")

    with monkeypatch.context() as patch:
        patch.setattr(os, "symlink", no_links)
        done = search.search(str(out), runs, 12345, _stand_in([]))
    assert done.best_as == "copy" and not os.path.islink(out / "best")
    chosen = out / "lr3e-05_bs32_ep3_r1"
    assert sorted(os.listdir(out / "best")) == sorted(os.listdir(chosen))
    assert (out / "best" / "eval_results.txt").read_text() == (chosen / "eval_results.txt").read_text()
    assert search.search(str(out), runs, 12345, _stand_in([])).best_as == "link"
    assert os.readlink(out / "best") == "lr3e-05_bs32_ep3_r1"
    assert not [name for name in os.listdir(out) if name.startswith(".")]  # no temporary left
