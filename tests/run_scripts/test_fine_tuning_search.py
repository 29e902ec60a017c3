"""The fine-tuning search (paper Appendix A.3) as a user runs it: run_classifier.py with a list of
learning rates, killed after its first run and started again with the same command; the chosen
run predicts and is a run folder that exports and conversion take. Bad values fail first."""

import json
import os

import pytest

from tests.run_scripts.conftest import killed_and_rerun, run_main_cases
from tests.run_scripts.fine_tuning_helpers import read_results, script_flags, write_model
from tests.run_scripts.test_run_classifier import write_mrpc
from tests.tiny import VOCAB

pytestmark = pytest.mark.slow


def _flags(model, data, out, **overrides):
    values = dict(
        task_name="MRPC", do_train=True, do_eval=True, do_predict=True, data_dir=data, max_seq_length=24,
        train_batch_size=8, learning_rate="3e-3,1e-3", num_train_epochs=1, save_checkpoints_steps=2, output_dir=out,
    )
    return script_flags(model, {**values, **overrides})


def test_bad_values_and_wrong_folders_fail_before_any_work_naming_the_flag(tmp_path):
    model, data = write_model(tmp_path / "model", VOCAB), tmp_path / "data"
    write_mrpc(data, n_train=8, n_dev=4, n_test=2)
    out, diverging = tmp_path / "out", tmp_path / "diverging"
    searched = tmp_path / "searched"
    searched.mkdir()
    (searched / "search.json").write_text('{"random_seed": 12345, "runs": []}')
    single = tmp_path / "single"
    single.mkdir()
    (single / "checkpoint").write_text("")
    cases = [
        (_flags(model, data, out, learning_rate="3e-3,abc"), "--learning_rate=3e-3,abc: 'abc' is not a number"),
        (_flags(model, data, out, train_batch_size="8,0"),
         "--train_batch_size=8,0: 0 is not a positive number (in a search)"),
        (_flags(model, data, out, num_train_epochs="1,2.5x"), "--num_train_epochs=1,2.5x: '2.5x' is not a number"),
        (_flags(model, data, out, learning_rate=1e-3, restarts=0), "--restarts=0: must be at least 1"),
        (_flags(model, data, out, do_eval=False), "a search (a list in --learning_rate, --train_batch_size or "
         "--num_train_epochs, or --restarts>1) needs --do_train and --do_eval: it chooses its run by the dev figures"),
        (_flags(model, data, searched, learning_rate=1e-3), f"--output_dir={searched} holds a search (search.json): "
         f"give its lists again to continue it, or --output_dir={searched}/best to use its chosen run"),
        (_flags(model, data, single), f"--output_dir={single} holds a single run, not a search: use another "
         "--output_dir"),
        # A new search whose first run fails before training leaves nothing: the corrected command
        # starts it afresh instead of being refused for the settings of the failed one.
        (_flags(model, tmp_path / "typo", out), f"task mrpc: no train file 'train.tsv' in data_dir "
         f"'{tmp_path / 'typo'}' ({tmp_path / 'typo' / 'train.tsv'} does not exist)"),
        # A run of the search names its own settings as flags, once: not the search's as well.
        (_flags(model, data, out, max_seq_length=4096), "--max_seq_length=4096 vs max_position_embeddings of "
         f"--bert_config_file={model}/bert_config.json: Cannot use sequence length 4096 because the BERT model was "
         "only trained up to sequence length 24 (max_position_embeddings)"),
        (_flags(model, data, out, num_train_epochs="0.5,1"),
         "8 training examples / --train_batch_size=8 x --num_train_epochs=0.5 gives no training step"),
        # Each run's loss NaN at its second step: each recorded as diverged, then no run to choose.
        (_flags(model, data, diverging, learning_rate="1e30,2e30", num_train_epochs=2),
         f"--output_dir={diverging}: every run of the search diverged (each folder's diverged.json or "
         "eval_results.txt says where): continue it with lower values in --learning_rate (two or more, or "
         "--restarts), or start afresh in another --output_dir"),
    ]
    outcomes = run_main_cases("run_classifier", [flags for flags, _ in cases])
    assert outcomes == [f"run_classifier.py: error: {message}" for _, message in cases]
    assert not out.exists() and os.listdir(searched) == ["search.json"]
    for run in ("lr1e+30_bs8_ep2_r0", "lr2e+30_bs8_ep2_r0"):
        assert json.loads((diverging / run / "diverged.json").read_text()) == {"step": 2, "message": (
            "the loss became nan at step 2; stopped without saving. No checkpoint was saved before it")}
    # (--save_checkpoints_steps=2)


def test_run_squad_evaluates_by_predicting_the_dev_set(tmp_path):
    model = write_model(tmp_path / "model", VOCAB)
    dev = tmp_path / "dev.json"
    dev.write_text('{"version": "1.1", "data": []}')
    flags = script_flags(model, dict(
        do_train=True, train_file=dev, do_predict=False, predict_file=dev, restarts=2, output_dir=tmp_path / "out",
    ))
    assert run_main_cases("run_squad", [flags]) == [
        "run_squad.py: error: a search (a list in --learning_rate, --train_batch_size or --num_train_epochs, or "
        "--restarts>1) needs --do_train and --do_predict: it chooses its run by the dev figures"
    ]


def test_a_killed_search_continues_chooses_by_dev_f1_predicts_and_its_best_exports(tmp_path):
    model, data, out = write_model(tmp_path / "model", VOCAB), tmp_path / "data", tmp_path / "out"
    write_mrpc(data, n_train=16, n_dev=16, n_test=4)
    first, second = out / "lr0.003_bs8_ep1_r0", out / "lr0.001_bs8_ep1_r0"
    killed_and_rerun("run_classifier.py", _flags(model, data, out), out, marker=first / "eval_results.txt")
    before = os.stat(first / "eval_results.txt").st_mtime_ns

    assert os.stat(first / "eval_results.txt").st_mtime_ns == before  # finished: not redone
    figures = {run: read_results(run / "eval_results.txt") for run in (first, second)}
    assert all(f["global_step"] == "2" for f in figures.values())  # 16 examples / 8 x 1 epoch each
    # MRPC is judged by its F1 (GLUE's), the first run on a tie.
    chosen = first if float(figures[first]["eval_f1"]) >= float(figures[second]["eval_f1"]) else second
    assert os.readlink(out / "best") == chosen.name
    table = (out / "search_results.csv").read_text().splitlines()
    assert table[0] == "run,learning_rate,train_batch_size,num_train_epochs,restart,seed,eval_f1,global_step,chosen"
    assert table[1].startswith(f"{chosen.name},") and table[1].endswith(",*") and len(table) == 3
    # --do_predict: with the chosen run only.
    assert (chosen / "test_results.tsv").is_file() and (chosen / "MRPC.tsv").is_file()
    assert not [p for p in (first, second) if p != chosen and (p / "test_results.tsv").exists()]

    # `best` is a run folder to the export and the conversion.
    from bert_tf.checkpoints import convert
    from bert_tf.export import exports

    export = exports.read("classifier", str(out / "best"))
    assert export.record.task_name == "mrpc" and export.record.labels == ("0", "1")
    assert convert.read_model(str(out / "best")).global_step == 2

    # Continued with a setting its finished runs were not made with (a longer grid, so that new runs would
    # train): refused before any work, the folder as it was.
    before = sorted(os.listdir(out)), (out / "search.json").read_text()
    grid = "3e-3,1e-3,5e-4"
    shallower = write_model(tmp_path / "shallower", VOCAB)  # another model: one layer
    config = json.loads((shallower / "bert_config.json").read_text())
    (shallower / "bert_config.json").write_text(json.dumps({**config, "num_hidden_layers": 1}))
    outcomes = run_main_cases("run_classifier", [
        _flags(model, data, out, learning_rate=grid, lora_rank=4),
        _flags(model, data, out, learning_rate=grid, max_seq_length=32),
        _flags(shallower, data, out, learning_rate=grid),
    ])
    assert outcomes == [
        f"run_classifier.py: error: --{name}={value}, but the search in --output_dir={out} was run with --{name}={old} "
        "(its runs would be ranked with runs made otherwise): give the same, or use another --output_dir"
        for name, value, old in (("lora_rank", 4, 0), ("max_seq_length", 32, 24),
                                 ("bert_config_file", shallower / "bert_config.json", model / "bert_config.json"))
    ]
    assert (sorted(os.listdir(out)), (out / "search.json").read_text()) == before
