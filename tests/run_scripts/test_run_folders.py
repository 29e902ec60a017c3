"""A run folder as a user meets it, through run_sentence_embedding.py (every fine-tuning script runs
the same driver): a folder that holds another program's model is never written into, a resumed run
keeps the settings its first steps were taken with, a search's chosen run is not trained in place,
a model whose outputs are NaN writes no result, and the values that train nothing are refused in
one line. Each refusal leaves every folder as it was."""

import hashlib
import json
import os
import re
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from tests.hf_folder import write_folder
from tests.run_scripts.conftest import run_main_cases, run_script
from tests.run_scripts.test_run_sentence_embedding import (  # noqa: F401 - model_dir: a fixture
    CONFIG,
    VOCAB,
    model_dir,
    write_pairs,
    write_st_folder,
)
from tests.tf1_checkpoint import original_shapes, random_weights
from tests.tiny import write_vocab

pytestmark = pytest.mark.slow

ERROR = "run_sentence_embedding.py: error: "


def _snapshot(folder):
    """Every file under `folder` (links not followed) -> a digest of its bytes: what a refusal must keep."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = (
                os.readlink(path) if os.path.islink(path) else hashlib.sha256(open(path, "rb").read()).hexdigest())
    return found


def _flags(data, out, **overrides):
    values = dict(do_train=True, data_dir=data, max_seq_length=16, train_batch_size=16, learning_rate=3e-3,
                  num_train_epochs=1, output_dir=out)
    values.update(overrides)
    return [f"--{k}={v}" for k, v in values.items() if v is not None] + ["--noprogress"]


@pytest.fixture
def setup(tmp_path, model_dir):  # noqa: F811 - the imported fixture, as pytest passes it
    data = tmp_path / "pairs"
    write_pairs(data)
    files = [f"--bert_config_file={model_dir / 'bert_config.json'}", f"--vocab_file={model_dir / 'vocab.txt'}"]
    return model_dir, data, files


def test_folders_of_other_models_are_never_written_into(tmp_path, setup):
    model, data, files = setup
    st_folder = write_st_folder(tmp_path / "st")
    hf_folder = tmp_path / "hf"
    write_folder(hf_folder, random_weights(original_shapes(CONFIG, with_heads=False), seed=1), CONFIG, "BertModel",
                 vocab=VOCAB, do_lower_case=True)
    export = tmp_path / "export"  # files written beside saved_model.pb would be served by no one
    (export / "variables").mkdir(parents=True)
    (export / "saved_model.pb").write_bytes(b"\x08\x01")
    google = tmp_path / "google"  # Google's release layout: no checkpoint state file, no record
    shutil.copytree(model, google)
    (google / "bert_model.ckpt.index").write_bytes(b"")
    layout = tmp_path / "layout"  # a config and a vocabulary, but no run record: a run would replace them
    shutil.copytree(model, layout)
    folders = [st_folder, hf_folder, export, google, layout]
    before = {folder: _snapshot(folder) for folder in folders}
    cases = [_flags(data, folder) + files for folder in folders]
    cases.append(_flags(data, st_folder, learning_rate="1e-3,2e-3", do_eval=True) + files)  # a new search in it
    outcomes = run_main_cases("run_sentence_embedding", cases)
    use = "not a run of bert_tf: a run would write its checkpoints and files into it. Use another --output_dir (to " \
          "start from that model, pass --init_checkpoint="
    assert outcomes == [
        f"{ERROR}--output_dir={st_folder} holds a sentence-transformers model (config_sentence_transformers.json, "
        f"modules.json, sentence_bert_config.json), {use}{st_folder})",
        f"{ERROR}--output_dir={hf_folder} holds a Hugging Face model (config.json, model.safetensors, "
        f"tokenizer_config.json), {use}{hf_folder})",
        f"{ERROR}--output_dir={export} holds a SavedModel (an export) (saved_model.pb), {use.split(' (')[0]}",
        f"{ERROR}--output_dir={google} holds another program's TensorFlow checkpoint (bert_model.ckpt.index), "
        f"{use}{google})",
        f"{ERROR}--output_dir={layout} holds a model's files without a fine_tuning_task.json (bert_config.json, "
        f"vocab.txt), {use}{layout})",
        f"{ERROR}--output_dir={st_folder} holds a sentence-transformers model (config_sentence_transformers.json, "
        f"modules.json, sentence_bert_config.json), {use}{st_folder})",
    ]
    assert {folder: _snapshot(folder) for folder in folders} == before


def test_a_resumed_run_keeps_its_settings_a_searchs_runs_stay_and_values_that_train_nothing_are_refused(
        tmp_path, setup):
    model, data, files = setup
    run, search = tmp_path / "run", tmp_path / "search"
    other_data = tmp_path / "other_pairs"
    shutil.copytree(data, other_data)
    swapped = tmp_path / "swapped_vocab.txt"  # the same size, two tokens swapped: other features, no error
    write_vocab(swapped, VOCAB[:5] + [VOCAB[6], VOCAB[5]] + VOCAB[7:])
    first = _flags(data, run) + files
    resumed = [
        (dict(learning_rate=5e-2), "--learning_rate=0.05, but the run in --output_dir={run} was trained with "
                                   "--learning_rate=0.003"),
        (dict(train_batch_size=8), "--train_batch_size=8, but the run in --output_dir={run} was trained with "
                                   "--train_batch_size=16"),
        (dict(random_seed=7), "--random_seed=7, but the run in --output_dir={run} was trained with "
                              "--random_seed=12345"),
        (dict(data_dir=other_data), "--data_dir='{other}', but the run in --output_dir={run} was trained with "
                                    "--data_dir='{data}'"),
    ]
    why = (": a resumed run takes its steps as its first steps were taken; give the same, or use another --output_dir "
           "(what may change on resume: --num_train_epochs, --eval_batch_size, --predict_batch_size, "
           "--save_checkpoints_steps, --keep_checkpoints, --jit_compile, --length_bucket, --skip_padding)")
    cases = [first]
    cases += [_flags(data, run, **changed) + files for changed, _ in resumed]
    cases.append(_flags(data, run, vocab_file=swapped, bert_config_file=model / "bert_config.json"))
    cases.append(_flags(data, tmp_path / "evaluated", do_train=False, do_eval=True, init_checkpoint=run,
                        vocab_file=swapped))
    cases.append(_flags(data, run, num_train_epochs=2) + files)  # trains further: epochs may change
    linked = tmp_path / "linked_pairs"  # the same data through a link: the same setting
    linked.symlink_to(data, target_is_directory=True)
    cases.append(_flags(linked, run, num_train_epochs=2) + files)
    cases.append(_flags(data, run, learning_rate="1e-3,3e-3", do_eval=True) + files)  # a search into a single run
    cases.append(_flags(data, search, learning_rate="1e-3,3e-3", do_eval=True) + files)
    cases.append(_flags(data, search / "best", num_train_epochs=3) + files)
    cases.append(_flags(data, search / "best", do_train=False, do_eval=True) + files)  # evaluating it is fine
    # Values that train nothing, or fail only after a step, and malformed lengths and folders.
    bad = [
        (dict(gradient_accumulation_steps=0), "--gradient_accumulation_steps must be a positive integer, got 0"),
        (dict(num_train_epochs=-1), "--num_train_epochs=-1 must be a finite number, 0 or more"),
        (dict(learning_rate="nan"), "--learning_rate must be a finite number, got nan"),
        (dict(learning_rate="inf"), "--learning_rate must be a finite number, got inf"),
        (dict(learning_rate=0), "--learning_rate=0 changes no weight: give a positive rate (to evaluate or predict "
                                "with the model as it is, --do_train=false)"),
        (dict(max_seq_length=2), "--max_seq_length=2 leaves no room for a text: [CLS] A [SEP] needs 3 positions"),
        (dict(output_dir=""), "--output_dir is empty: name the folder to write in"),
    ]
    cases += [_flags(data, tmp_path / f"bad{i}", **values) + files for i, (values, _) in enumerate(bad)]
    outcomes = run_main_cases("run_sentence_embedding", cases)

    expected = ["ok"]
    expected += [ERROR + message.format(run=run, other=other_data, data=data) + why for _, message in resumed]
    expected.append(f"{ERROR}--vocab_file={swapped} is not the vocabulary of {run / 'vocab.txt'}: line 6 is "
                    f"{VOCAB[6]!r} vs {VOCAB[5]!r}")
    expected.append(f"{ERROR}--vocab_file={swapped} is not the vocabulary of {run / 'vocab.txt'}: line 6 is "
                    f"{VOCAB[6]!r} vs {VOCAB[5]!r}")
    expected += ["ok", "ok", f"{ERROR}--output_dir={run} holds a single run, not a search: use another --output_dir",
                 "ok"]
    chosen = os.path.realpath(search / "best")
    expected.append(f"{ERROR}--output_dir={search / 'best'} is a run of the search in {search} (search.json): training "
                    f"it further would change a run its table ranks. Train a copy (cp -rL {search / 'best'} NEW, "
                    "--output_dir=NEW), or continue the search with more values (--num_train_epochs=1,3)")
    expected.append("ok")
    expected += [ERROR + message for _, message in bad]
    assert outcomes == expected
    assert not any((tmp_path / f"bad{i}").exists() for i in range(len(bad)))
    assert (run / "vocab.txt").read_text().split() == VOCAB
    assert json.loads((run / "training_settings.json").read_text())["learning_rate"] == 3e-3
    # 64 pairs / 16 a batch: 4 steps an epoch; the resumed run trained a second epoch.
    assert "ckpt-8.index" in os.listdir(run)
    assert json.loads((search / os.path.basename(chosen) / "eval_results.txt").read_text().split("global_step = ")[1]
                      .split()[0]) == 4


def test_a_model_whose_outputs_are_nan_writes_no_result_and_a_shorter_length_is_a_folders_own(tmp_path, setup):
    model, data, _ = setup
    # A finite weight that the loaders take, whose products overflow: the vectors are NaN.
    st_folder = write_st_folder(tmp_path / "st", max_seq_length=12)
    weights = load_file(st_folder / "model.safetensors")
    name = next(n for n in weights if n.endswith("encoder.layer.1.output.LayerNorm.weight"))
    weights[name] = np.full_like(weights[name], 3e38)
    save_file(weights, st_folder / "model.safetensors")
    out = tmp_path / "nan"
    result = run_script("run_sentence_embedding.py", *_flags(data, out, do_train=False, do_eval=True, do_predict=True,
                                                             init_checkpoint=st_folder, max_seq_length=None))
    assert result.returncode == 1
    assert re.fullmatch(
        f"{re.escape(ERROR)}evaluation with the model at step 0: NaN or Inf in the task's outputs anchor, positive and "
        r"the model's outputs for (\d+) of \1 example\(s\): the weights it starts from overflow \(check that "
        r"checkpoint\); nothing was written as a result", result.stderr.strip().splitlines()[-1])
    assert not (out / "eval_results.txt").exists() and not (out / "test_embeddings.npy").exists()

    # A sentence-transformers folder's max length is a truncation setting: a shorter one is the run's,
    # kept in its record and written into the folder to_hf makes.
    fine = write_st_folder(tmp_path / "fine", max_seq_length=12)
    run = tmp_path / "short"
    # Resumed without --max_seq_length, the run keeps its own length, not the folder's.
    assert run_main_cases("run_sentence_embedding", [_flags(data, run, init_checkpoint=fine, max_seq_length=8),
                                                     _flags(data, run, init_checkpoint=fine, max_seq_length=None,
                                                            num_train_epochs=2)]) == ["ok", "ok"]
    assert "ckpt-8.index" in os.listdir(run)
    assert json.loads((run / "fine_tuning_task.json").read_text())["max_seq_length"] == 8
    # A run that diverged (a search's) converts with a warning naming its file.
    (run / "diverged.json").write_text(json.dumps({"step": 3, "message": "the loss became nan at step 3"}))
    result = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={run}",
                        f"--converted_checkpoint_path={tmp_path / 'hf'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "hf" / "sentence_bert_config.json").read_text())["max_seq_length"] == 8
    assert (f"--checkpoint_to_convert: {run / 'diverged.json'}: this run diverged at step 3 and did not finish; its "
            "last checkpoint is from before that, not a trained model") in result.stderr


def test_a_resumed_run_keeps_the_cpu_kernels_it_was_trained_with(tmp_path, setup):
    """oneDNN's and Eigen's kernels round differently: a run resumes on the kernels of its first
    steps (chosen before TensorFlow loads), and the user's other setting is refused."""
    from bert_tf import kernels

    _, data, files = setup
    run = tmp_path / "run"
    first = run_script("run_sentence_embedding.py", *_flags(data, run), *files, env={kernels.VARIABLE: "0"})
    assert first.returncode == 0, first.stderr[-3000:]
    assert "oneDNN off: TF_ENABLE_ONEDNN_OPTS=0 in the environment" in first.stderr
    assert json.loads((run / "training_settings.json").read_text())[kernels.VARIABLE] == "0"
    unset = {kernels.VARIABLE: None}  # whatever the suite runs with: the script's own choice
    further = run_script("run_sentence_embedding.py", *_flags(data, run, num_train_epochs=2), *files, env=unset)
    assert further.returncode == 0, further.stderr[-3000:]
    assert "oneDNN off: the setting of the run it resumes" in further.stderr
    refused = run_script("run_sentence_embedding.py", *_flags(data, run, num_train_epochs=3), *files,
                         env={kernels.VARIABLE: "1"})
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith(
        f"{ERROR}TF_ENABLE_ONEDNN_OPTS='1', but the run in --output_dir={run} was trained with "
        "TF_ENABLE_ONEDNN_OPTS='0': a resumed run takes its steps as its first steps were taken")
    # A new run takes this machine's choice for training.
    fresh = run_script("run_sentence_embedding.py", *_flags(data, tmp_path / "fresh"), *files, env=unset)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    choice = kernels.choose("training", {k: v for k, v in os.environ.items() if k != kernels.VARIABLE})
    expected = {True: "oneDNN on", False: "oneDNN off", None: "oneDNN " + ("on" if kernels.tensorflow_default()
                                                                            else "off")}[choice.value]
    assert f"{expected}: {choice.source if choice.value is not None else 'TensorFlow'}" in fresh.stderr
