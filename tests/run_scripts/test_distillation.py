"""Distillation as a user runs it (`--teacher`): run_classifier.py's student cut from its teacher's
layers, taught by it on the labels and on unlabelled transfer text, resumed exactly after kill -9,
exported; the refusals of a teacher that cannot teach the student, before any work."""

import json
import re

import numpy as np
import pytest

from tests.run_scripts.conftest import killed_and_rerun, run_main_cases, run_script, served_export
from tests.run_scripts.fine_tuning_helpers import write_model
from tests.run_scripts.test_run_classifier import _flags, _probabilities, _results, write_mrpc
from tests.tiny import VOCAB, tiny_config, write_vocab

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    """A 2-layer MRPC teacher, trained to learn the task, and its data and model folders."""
    root = tmp_path_factory.mktemp("teacher")
    model = write_model(root / "model", VOCAB)
    data = root / "data"
    write_mrpc(data)
    out = root / "run"
    result = run_script("run_classifier.py", *_flags(model, data, out, do_predict=False))
    assert result.returncode == 0, result.stderr[-3000:]
    assert float(_results(out)["eval_accuracy"]) > 0.9
    return {"model": model, "data": data, "run": out}


def _student(folders, out, **overrides):
    """A student of one layer (the teacher's second), taught on MRPC and on its test file as transfer text."""
    values = dict(teacher=folders["run"], student_layers="1", transfer_file=folders["data"] / "test.tsv",
                  vocab_file=None, bert_config_file=None, learning_rate=2e-3, num_train_epochs=6)
    values.update(overrides)
    return _flags(folders["model"], values.pop("data_dir", folders["data"]), out, **values)


def test_a_student_from_the_teachers_layers_learns_from_it_on_transfer_text_resumes_and_exports(tmp_path, teacher):
    out = tmp_path / "student"
    result = run_script("run_classifier.py", *_student(teacher, out))
    assert result.returncode == 0, result.stderr[-3000:]
    log = result.stderr
    # Both kinds of input counted; both models' sizes; the start from the teacher's layers.
    assert "157 examples (128 labelled, 29 of --transfer_file)" in log
    assert "Student: " in log and f"teacher {teacher['run']}: " in log
    counts = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) parameters", log)[:2]]
    assert counts[0] < counts[1]
    assert f"Training initialised from {teacher['run']}; now at step" in log
    assert float(_results(out)["eval_accuracy"]) > 0.9
    config = json.loads((out / "bert_config.json").read_text())
    assert config["num_hidden_layers"] == 1 and config["hidden_size"] == tiny_config().hidden_size
    record = json.loads((out / "fine_tuning_task.json").read_text())
    assert record["distillation"] == {
        "teacher": str(teacher["run"]), "distill_temperature": 2.0, "distill_alpha": 0.0, "student_layers": [1],
        "transfer_file": str(teacher["data"] / "test.tsv"), "teacher_outputs": "cached",
    }
    training = json.loads((out / "training_settings.json").read_text())
    assert training["teacher"] == str(teacher["run"]) and training["student_layers"] == "1"
    # Six epochs: the teacher's outputs computed once, on every training row, and kept in the run's folder.
    assert "The teacher's outputs: computed on 157 rows" in log and (out / "teacher_outputs.npz").is_file()

    # kill -9 mid-training, the same command again: the cache read, not made again; the same
    # predictions, byte for byte.
    again_dir = tmp_path / "again"
    again = killed_and_rerun("run_classifier.py", _student(teacher, again_dir), again_dir)
    assert "Training resumed from" in again.stderr
    assert f"The teacher's outputs: read from {again_dir / 'teacher_outputs.npz'}" in again.stderr
    assert "The teacher's outputs: computed" not in again.stderr
    assert (again_dir / "test_results.tsv").read_text() == (out / "test_results.tsv").read_text()

    # The teacher run in every step instead: its outputs are the cache's (each row's own), so the
    # student learns the same. (A cache whose rows were out of order left this student at chance.)
    in_step = tmp_path / "in_step"
    result = run_script("run_classifier.py", *_student(teacher, in_step, teacher_outputs="in_step"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "The teacher's outputs" not in result.stderr and not (in_step / "teacher_outputs.npz").exists()
    assert json.loads((in_step / "fine_tuning_task.json").read_text())["distillation"]["teacher_outputs"] == "in_step"
    np.testing.assert_allclose(_probabilities(in_step), _probabilities(out), atol=1e-5)
    # Two replicas: the cache's pass runs on both, its outputs gathered in the rows' order (each
    # row's as one device's); the student learns from them.
    mirrored = tmp_path / "mirrored"
    result = run_script("run_classifier.py", *_student(teacher, mirrored, num_cpu_devices=2))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 replica(s)" in result.stderr and "The teacher's outputs: computed on 157 rows" in result.stderr
    with np.load(mirrored / "teacher_outputs.npz") as two, np.load(out / "teacher_outputs.npz") as one:
        np.testing.assert_allclose(two["outputs"], one["outputs"], atol=1e-5)
    assert float(_results(mirrored)["eval_accuracy"]) > 0.9
    # A resume that asks the other way is refused: the run's steps were taken with its cache.
    changed = run_script("run_classifier.py", *_student(teacher, in_step, teacher_outputs="cached",
                                                        num_train_epochs=7))
    assert changed.returncode != 0 and "teacher_outputs" in changed.stderr.splitlines()[-1]

    # The finished run given again: nothing left to train, so no pass, even without its cache.
    (out / "teacher_outputs.npz").unlink()
    finished = run_script("run_classifier.py", *_student(teacher, out))
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "The teacher's outputs" not in finished.stderr and not (out / "teacher_outputs.npz").exists()
    assert (out / "test_results.tsv").read_text() == (again_dir / "test_results.tsv").read_text()

    # A resume with another temperature is refused: its steps were taken with this one.
    changed = run_script("run_classifier.py", *_student(teacher, out, distill_temperature=4.0, num_train_epochs=7))
    assert changed.returncode != 0 and "distill_temperature" in changed.stderr.splitlines()[-1]

    # The student exports as any classifier: its served probabilities are the script's.
    serve = served_export("classifier", out, tmp_path / "export")
    rows = [line.split("\t") for line in (teacher["data"] / "test.tsv").read_text().splitlines()[1:]]
    import tensorflow as tf

    served = serve(text_a=tf.constant([r[3] for r in rows]), text_b=tf.constant([r[4] for r in rows]))
    np.testing.assert_allclose(served["probabilities"].numpy(), _probabilities(out), atol=1e-5)


def test_a_distilled_run_is_a_run_like_any_other(tmp_path, teacher):
    """A Hugging Face folder as the teacher; a search with restarts over LoRA students cut from it; the
    search's best/ as the teacher of a student from its own --init_checkpoint; the students
    converted to Hugging Face folders that predict what the runs predicted."""
    teacher_hf = tmp_path / "teacher_hf"
    converted = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={teacher['run']}",
                           f"--converted_checkpoint_path={teacher_hf}")
    assert converted.returncode == 0, converted.stderr[-3000:]
    search = tmp_path / "search"
    result = run_script("run_classifier.py", *_student(teacher, search, teacher=teacher_hf, lora_rank=2,
                                                       learning_rate="3e-3,1e-3", restarts=2, num_train_epochs=3))
    assert result.returncode == 0, result.stderr[-3000:]
    table = (search / "search_results.csv").read_text().splitlines()
    assert len(table) == 1 + 4, table  # two rates, two restarts each
    best = search / "best"
    record = json.loads((best / "fine_tuning_task.json").read_text())
    assert record["lora_rank"] == 2 and record["distillation"]["teacher"] == str(teacher_hf)
    assert record["distillation"]["student_layers"] == [1]

    # A student of its own start (a one-layer model of random weights) taught by the search's best.
    small = write_model(tmp_path / "small", VOCAB)
    config = json.loads((small / "bert_config.json").read_text())
    (small / "bert_config.json").write_text(json.dumps({**config, "num_hidden_layers": 1}))
    own = tmp_path / "own"
    result = run_script("run_classifier.py", *_flags(small, teacher["data"], own, teacher=best,
                                                     transfer_file=teacher["data"] / "test.tsv", num_train_epochs=6))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Training initialised from" not in result.stderr  # random weights, as without a teacher
    assert f"teacher {best}: " in result.stderr
    assert "student_layers" not in json.loads((own / "fine_tuning_task.json").read_text())["distillation"]

    # Each student converts to a Hugging Face folder that predicts what its run predicted.
    for run in (best, own):
        folder = tmp_path / f"{run.name}_hf"
        converted = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={run}",
                               f"--converted_checkpoint_path={folder}")
        assert converted.returncode == 0, converted.stderr[-3000:]
        again = tmp_path / f"{run.name}_again"
        result = run_script("run_classifier.py", *_flags(teacher["model"], teacher["data"], again, do_train=False,
                                                         do_eval=False, init_checkpoint=folder, vocab_file=None,
                                                         bert_config_file=None))
        assert result.returncode == 0, result.stderr[-3000:]
        np.testing.assert_allclose(_probabilities(again), _probabilities(run), atol=1e-5)


def test_a_teacher_that_cannot_teach_the_student_is_refused_before_any_work(tmp_path, teacher):
    other_vocab = tmp_path / "vocab.txt"
    write_vocab(other_vocab, list(reversed(VOCAB)))
    stsb = tmp_path / "stsb"
    stsb.mkdir()
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    for name in ("train", "dev", "test"):
        (stsb / f"{name}.tsv").write_text(header + "0\tmain\tx\t2012\t1\tnone\tnone\tthe cat .\tthe dog .\t3.5\n")
    cases = {
        "no teacher": _student(teacher, tmp_path / "a", teacher=tmp_path / "nothing"),
        "vocab": _student(teacher, tmp_path / "b", vocab_file=other_vocab),
        "layers": _student(teacher, tmp_path / "c", student_layers="0,2"),
        "order": _student(teacher, tmp_path / "d", student_layers="1,0"),
        "init": _student(teacher, tmp_path / "e", init_checkpoint=teacher["run"]),
        "alpha": _student(teacher, tmp_path / "f", distill_alpha=1.5),
        "temperature": _student(teacher, tmp_path / "g", distill_temperature=0.0),
        "without teacher": _flags(teacher["model"], teacher["data"], tmp_path / "h", transfer_file="x.tsv"),
        "labels": _student(teacher, tmp_path / "i", task_name="STS-B", data_dir=stsb, transfer_file=None),
        "casing": _student(teacher, tmp_path / "j", do_lower_case=False),
        "transfer": _student(teacher, tmp_path / "k", transfer_file=tmp_path / "missing.tsv"),
        "positions": _student(teacher, tmp_path / "l", max_seq_length=64),
        "folder": _student(teacher, tmp_path / "m", transfer_file=stsb),
    }
    outcomes = dict(zip(cases, run_main_cases("run_classifier", list(cases.values())), strict=True))
    expected = {
        "no teacher": f"--teacher={tmp_path / 'nothing'}: no such folder or file",
        "vocab": f"--vocab_file={other_vocab}",
        "layers": "--student_layers=0,2: expected distinct indices in increasing order, each from 0 to 1 (the "
                  "teacher has 2 layers)",
        "order": "--student_layers=1,0: expected distinct indices",
        "init": "--student_layers builds the student from the teacher's layers: --init_checkpoint is not read",
        "alpha": "--distill_alpha=1.5 must be between 0 and 1",
        "temperature": "--distill_temperature=0.0 must be positive",
        "without teacher": "--transfer_file is read only with --teacher",
        "labels": f"--teacher={teacher['run']} has label_kind single, this run regression",
        "casing": "--do_lower_case=False, but the teacher",
        "transfer": f"--transfer_file={tmp_path / 'missing.tsv'}: no such file",
        "positions": "--max_seq_length=64: the teacher",
        "folder": f"--transfer_file={stsb} is a folder: give the file of unlabelled inputs",
    }
    for name, text in expected.items():
        assert text in outcomes[name], (name, outcomes[name])
    for out in "abcdefghijklm":  # each case's output_dir: nothing written before the refusal
        assert not (tmp_path / out / "fine_tuning_task.json").exists()


def _task_flags(kind, tmp_path):
    """`(script, flags(out, **overrides))` of a short run of each other task on its tests' data."""
    if kind == "ner":
        from tests.run_scripts import test_run_ner as t

        model, data = t.write_model(tmp_path / "model", t.VOCAB), tmp_path / "data"
        t.write_conll(data)
        return "run_ner.py", lambda out, **o: t._flags(model, data, out, num_train_epochs=2, **o)
    if kind == "squad":
        from tests.run_scripts import test_run_squad as t

        model = tmp_path / "model"
        model.mkdir()
        config = tiny_config(vocab_size=len(t.VOCAB), max_position_embeddings=64)
        (model / "bert_config.json").write_text(json.dumps(config.to_dict()))
        write_vocab(model / "vocab.txt", t.VOCAB)
        train = t.write_squad(tmp_path / "train.json", 48, seed=1)
        dev = t.write_squad(tmp_path / "dev.json", 12, seed=2)
        files = dict(do_train=True, train_file=train, do_predict=True, predict_file=dev, num_train_epochs=2)
        return "run_squad.py", lambda out, **o: t._flags(model, out, **{**files, **o})
    if kind == "swag":
        from tests.run_scripts import test_run_swag as t

        model, data = t.write_model(tmp_path / "model", t.VOCAB), tmp_path / "data"
        t.write_swag(data)
        return "run_swag.py", lambda out, **o: t._flags(model, data, out, num_train_epochs=2, **o)
    from tests.run_scripts import test_run_sentence_embedding as t

    model = tmp_path / "model"
    model.mkdir()
    (model / "bert_config.json").write_text(json.dumps(t.CONFIG.to_dict()))
    write_vocab(model / "vocab.txt", t.VOCAB)
    data = tmp_path / "data"
    t.write_pairs(data)
    return "run_sentence_embedding.py", lambda out, **o: t._flags(model, data, out, num_train_epochs=3, **o)


def _squad_questions(tmp_path):
    """The dev file's questions without their answers: a test file's layout."""
    data = json.loads((tmp_path / "dev.json").read_text())
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa.pop("answers", None)
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(data))
    return path


# Each task's transfer file (made in the test's folder) and the line counting its inputs.
TRANSFER = {"embedder": lambda tmp_path: tmp_path / "data" / "test.tsv",  # its texts, an empty one among them
            "swag": lambda tmp_path: tmp_path / "data" / "test.csv",
            "squad": _squad_questions,  # a --predict_file's layout
            "ner": lambda tmp_path: tmp_path / "data" / "test.txt"}  # tagged: its tags are not read
TRANSFER_COUNTS = {"embedder": "64 pairs with hard negatives and 8 texts of --transfer_file (72 rows)",
                   "swag": "173 examples (160 labelled, 13 of --transfer_file)",
                   "ner": "160 sentences and 24 of --transfer_file (",
                   "squad": "60 examples (48 labelled, 12 of --transfer_file), 126 features (23 of --transfer_file)"}


@pytest.mark.parametrize("kind", ["ner", "squad", "swag", "embedder"])
def test_every_task_trains_a_student_cut_from_its_teacher_on_its_soft_targets(tmp_path, kind):
    script, flags = _task_flags(kind, tmp_path)
    teacher = tmp_path / "teacher"
    # An embedder's pooling and normalization are its head: a student cut from it takes them.
    head = dict(pooling="cls", normalize=True) if kind == "embedder" else {}
    result = run_script(script, *flags(teacher, **head))
    assert result.returncode == 0, result.stderr[-3000:]
    student = tmp_path / "student"
    given = [f for f in flags(student, teacher=teacher, student_layers="0", distill_temperature=3.0,
                                 iterations_per_loop=2)
             if not f.startswith("--bert_config_file=")]  # the config is the teacher's, cut to one layer
    transfer = TRANSFER[kind](tmp_path)  # texts in the task's prediction layout, their only targets the teacher's
    given.append(f"--transfer_file={transfer}")
    result = run_script(script, *given)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Training initialised from {teacher}; now at step" in result.stderr
    counts = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) parameters", result.stderr.split("Student: ")[1])]
    assert counts[0] < counts[1]
    losses = [float(v) for v in re.findall(r"'distill_loss': ([\d.e-]+)", result.stderr)]
    assert losses and all(np.isfinite(losses)) and losses[0] > 0
    assert json.loads((student / "bert_config.json").read_text())["num_hidden_layers"] == 1
    record = json.loads((student / "fine_tuning_task.json").read_text())
    assert record["distillation"]["student_layers"] == [0] and record["distillation"]["distill_temperature"] == 3.0
    for name, value in head.items():
        assert record[name] == value, record
    if kind == "embedder":  # converted to a sentence-transformers folder, it embeds what the run did
        folder = tmp_path / "student_st"
        converted = run_script("convert_checkpoint.py", "--direction=to_hf", f"--checkpoint_to_convert={student}",
                               f"--converted_checkpoint_path={folder}")
        assert converted.returncode == 0, converted.stderr[-3000:]
        assert json.loads((folder / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"]
        assert (folder / "2_Normalize").is_dir()
        again = tmp_path / "again"
        predicted = run_script(script, "--do_predict", f"--data_dir={tmp_path / 'data'}",
                               f"--init_checkpoint={folder}", f"--output_dir={again}", "--max_seq_length=16",
                               "--noprogress")
        assert predicted.returncode == 0, predicted.stderr[-3000:]
        np.testing.assert_allclose(np.load(again / "test_embeddings.npy"), np.load(student / "test_embeddings.npy"),
                                   atol=1e-5)
    assert TRANSFER_COUNTS[kind] in result.stderr
    if kind == "squad":  # a transfer file that is no SQuAD json, or holds no question: refused before any features
        bad, empty = tmp_path / "bad.json", tmp_path / "empty.json"
        bad.write_text("questions, one per line\n")
        empty.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": []}]}))
        common = [f for f in given[:-1] if not f.startswith("--output_dir=")]
        outcomes = run_main_cases("run_squad", [[*common, f"--output_dir={tmp_path / name}", f"--transfer_file={path}"]
                                                for name, path in (("bad_run", bad), ("empty_run", empty))])
        assert f"error: --transfer_file: {bad} is not a SQuAD file" in outcomes[0], outcomes
        assert f"{empty}: no question to answer" in outcomes[1], outcomes
        for name in ("bad_run", "empty_run"):
            assert not list((tmp_path / name).glob("*.tf_record")), name
    # Two epochs or more: the teacher's outputs cached, once, on every training row (transfer rows too).
    assert re.search(r"The teacher's outputs: computed on \d+ rows", result.stderr), result.stderr[-3000:]
    assert (student / "teacher_outputs.npz").is_file()
    assert record["distillation"]["transfer_file"] == str(transfer)
    if kind == "embedder":  # a student of another width cannot match the teacher's vectors: refused first
        wide = tmp_path / "wide.json"
        wide.write_text(json.dumps({**json.loads((student / "bert_config.json").read_text()), "hidden_size": 64}))
        refused = run_script(script, *flags(tmp_path / "wide", teacher=teacher, bert_config_file=wide))
        assert refused.returncode != 0 and refused.stderr.strip().splitlines()[-1].endswith(
            "gives vectors of 32 dimensions, the student 64: the vectors' squared distance needs one width")
        assert not (tmp_path / "wide").exists()
