"""The CPU kernels' choice (bert_tf.kernels), made before TensorFlow loads: the order of what decides
it, the work read from a script's command line as absl reads it (run_scripts), and the rule the
quickstart's classify.py restates without bert_tf."""

import io
import json
import types

import pytest

import run_scripts
from bert_tf import kernels
from run_scripts import quickstart

AVX512 = {"fpu", "sse2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl"}
AVX2 = {"fpu", "sse2", "avx", "avx2", "fma"}


@pytest.mark.parametrize("features, kind", [(AVX512, "avx512"), (AVX2, "avx2"), ({"sse2", "avx"}, "other")])
def test_the_kind_of_cpu_is_read_from_its_features_and_tensorflow_turns_onednn_on_from_avx512(features, kind):
    assert kernels.cpu_kind(features) == kind
    assert kernels.tensorflow_default(kind) is (kind == "avx512")


def test_the_cpuinfo_flags_line_is_read(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512f\n\nprocessor\t: 1\n")
    assert kernels.cpu_features(str(cpuinfo)) == {"fpu", "avx2", "avx512f"}
    assert kernels.cpu_features(str(tmp_path / "none")) == set()


@pytest.mark.parametrize("value, parsed", [("1", True), ("TRUE", True), ("0", False), ("false", False),
                                           ("", None), ("yes", None)])
def test_the_variable_is_read_as_tensorflow_reads_it(value, parsed):
    assert kernels.parse(value) is parsed


@pytest.mark.parametrize("argv, expected", [
    (["run_scripts/run_classifier.py", "--do_train=true", "--output_dir=/o"], ("training", "/o")),
    (["run_classifier.py", "--do_train", "--output_dir", "/o"], ("training", "/o")),  # absl's `--name value`
    (["run_squad.py", "-do_train=True", "-output_dir=/o"], ("training", "/o")),  # one dash as two
    (["run_ner.py", "--do_train", "--nodo_train", "--do_eval"], ("prediction", None)),  # the last one wins
    (["run_swag.py", "--do_eval", "--output_dir=/o"], ("prediction", None)),
    (["run_pretraining.py", "--do_train=1", "--output_dir=/p"], ("training", "/p")),
    (["extract_features.py", "--input_file=x"], ("prediction", None)),
    (["export_saved_model.py", "--export_type=classifier"], (None, None)),
    (["create_pretraining_data.py"], (None, None)),
    ([], (None, None)),
])
def test_the_work_is_read_from_the_command_line(argv, expected):
    assert run_scripts.script_work(argv) == expected


def test_a_flagfile_is_read_in_place(tmp_path):
    flagfile = tmp_path / "flags.txt"
    flagfile.write_text("# a comment\n--do_train=true\n--output_dir=/from/file\n")
    assert run_scripts.script_work(["run_classifier.py", f"--flagfile={flagfile}"]) == ("training", "/from/file")
    later = ["run_classifier.py", f"--flagfile={flagfile}", "--nodo_train"]  # a flag after the file wins
    assert run_scripts.script_work(later) == ("prediction", None)


def _choose(work, environ=None, resumed=None, kind="avx2", monkeypatch=None, speed_file=None):
    monkeypatch.setattr(kernels, "cpu_kind", lambda features=None: kind)
    environ = {"BERT_TF_SPEED_FILE": str(speed_file or "/nonexistent/speed.json"), **(environ or {})}
    return kernels.choose(work, environ, resumed)


def test_the_users_setting_wins_then_a_resumed_run_then_a_measurement_then_the_rule(tmp_path, monkeypatch):
    # The rule, by kind and work (the module's measured table).
    for kind in ("avx512", "avx2"):
        for work in kernels.WORKS:
            choice = _choose(work, kind=kind, monkeypatch=monkeypatch)
            assert choice.value is kernels.RULE[kind][work]
            assert choice.source == f"the rule for {work} on {'AVX-512' if kind == 'avx512' else 'AVX2'} CPUs"
    assert _choose("training", kind="other", monkeypatch=monkeypatch) == (None, "TensorFlow's default")
    assert _choose(None, monkeypatch=monkeypatch) == (None, "TensorFlow's default")
    # This machine's measurement, where its signature is this machine's.
    speed = tmp_path / "speed.json"
    speed.write_text(json.dumps({"signature": kernels.machine_signature(),
                                 "choices": {"onednn_serving": {"value": True}, "jit_compile": {"value": False}}}))
    assert _choose("serving", speed_file=speed, monkeypatch=monkeypatch) == (
        True, f"measured for serving on this machine ({speed})")
    assert _choose("training", speed_file=speed, monkeypatch=monkeypatch).source.startswith("the rule")  # not saved
    speed.write_text(json.dumps({"signature": {**kernels.machine_signature(), "cores": 999},
                                 "choices": {"onednn_serving": {"value": True}}}))
    another_machine = _choose("serving", speed_file=speed, monkeypatch=monkeypatch)
    assert another_machine.source.startswith("the rule")
    # A resumed run's setting, before any measurement; the user's before everything.
    assert _choose("serving", resumed="1", monkeypatch=monkeypatch) == (True, "the setting of the run it resumes")
    assert _choose("training", {"TF_ENABLE_ONEDNN_OPTS": "0"}, resumed="1", monkeypatch=monkeypatch) == (
        False, "TF_ENABLE_ONEDNN_OPTS=0 in the environment")


def test_the_signature_and_choices_are_those_bench_scripts_save(tmp_path, monkeypatch):
    """bert_tf.kernels reads the speed file without TensorFlow: it must find what speed.save_measured wrote."""
    from bert_tf.training import speed

    assert kernels.machine_signature() == speed.machine_signature("cpu")
    path = tmp_path / "speed.json"
    speed.save_measured(False, 0.8, path=str(path), name="onednn_prediction", figures={"on_examples_per_second": 8})
    assert kernels.measured("prediction", str(path)) is False and kernels.measured("training", str(path)) is None
    assert json.loads(path.read_text())["choices"]["onednn_prediction"]["onednn_speedup"] == 0.8


def test_a_setting_made_by_an_earlier_script_is_chosen_anew_and_the_users_is_kept(monkeypatch):
    monkeypatch.setattr(kernels, "cpu_kind", lambda features=None: "avx2")
    environ = {"BERT_TF_SPEED_FILE": "/nonexistent"}
    chosen = kernels.apply(kernels.choose("training", environ), environ)
    assert environ["TF_ENABLE_ONEDNN_OPTS"] == "1" and environ["BERT_TF_ONEDNN_CHOICE"] == f"1:{chosen.source}"
    assert kernels.describe(environ) == "oneDNN on: the rule for training on AVX2 CPUs"
    # A process it starts (which inherits both) chooses for its own work: prediction, off here.
    again = kernels.apply(kernels.choose("prediction", environ), environ)
    assert again.value is False and environ["TF_ENABLE_ONEDNN_OPTS"] == "0"
    # The user's variable is never replaced, and is what the log line names.
    users = {"TF_ENABLE_ONEDNN_OPTS": "true"}
    assert kernels.apply(kernels.choose("prediction", users), users).value is True
    assert users == {"TF_ENABLE_ONEDNN_OPTS": "true"}
    assert kernels.describe(users) == "oneDNN on: TF_ENABLE_ONEDNN_OPTS=true in the environment"
    assert kernels.setting(users) == "1" and kernels.setting({"TF_ENABLE_ONEDNN_OPTS": "0"}) == "0"


def test_a_resumed_runs_setting_is_read_from_its_training_settings(tmp_path):
    (tmp_path / "training_settings.json").write_text(json.dumps({"TF_ENABLE_ONEDNN_OPTS": "0", "learning_rate": 1e-3}))
    assert kernels.resumed_setting(str(tmp_path)) == "0"
    assert kernels.resumed_setting(str(tmp_path / "none")) is None
    (tmp_path / "training_settings.json").write_text(json.dumps({"learning_rate": 1e-3}))  # an earlier version's
    assert kernels.resumed_setting(str(tmp_path)) is None


def test_classify_py_restates_the_serving_rule_without_bert_tf():
    """The quickstart's classify.py imports nothing of bert_tf: its own line must say what RULE says."""
    assert kernels.RULE["avx512"]["serving"] is True and kernels.RULE["avx2"]["serving"] is False
    assert 'os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1" if avx512() else "0")' in quickstart.CLASSIFY_PY
    assert quickstart.CLASSIFY_PY.index("TF_ENABLE_ONEDNN_OPTS") < quickstart.CLASSIFY_PY.index("import tensorflow")
    # Run as it is, up to TensorFlow's import, on each kind of CPU: the variable it sets is the rule's.
    prelude = quickstart.CLASSIFY_PY[: quickstart.CLASSIFY_PY.index("import tensorflow")]
    for kind, features in (("avx512", AVX512), ("avx2", AVX2)):
        cpuinfo = io.StringIO(f"model name\t: a CPU\nflags\t\t: {' '.join(sorted(features))}\n")
        environ = {}
        fake_os = types.SimpleNamespace(environ=environ)
        namespace = {"__name__": "classify", "open": lambda *a, info=cpuinfo, **k: info}
        exec(prelude.replace("import os\n", ""), {**namespace, "os": fake_os})
        assert environ == {"TF_ENABLE_ONEDNN_OPTS": "1" if kernels.RULE[kind]["serving"] else "0"}, kind
