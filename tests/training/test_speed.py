"""jit_compile (training) and serving_jit_compile (float exports) resolved per platform and machine:
given values win; unset, XLA on GPU and TPU (and for int8 exports everywhere), and on CPU the choice
saved for this machine's signature (`bench/finetuning.py --save_defaults`, `bench/serving.py
--save_defaults`; both in one file), else the built-in default (off)."""

import json
import os
import platform
import types

import pytest
import tensorflow as tf

from bert_tf.export.serving import choose_serving_jit_compile
from bert_tf.training import speed
from tests.helpers import dead_owner_tag


@pytest.fixture(autouse=True)
def _speed_file(tmp_path, monkeypatch):
    """Every test reads and writes its own speed file, never the user's."""
    path = tmp_path / "cache" / "speed.json"
    monkeypatch.setenv(speed.SPEED_FILE_VARIABLE, str(path))
    return path


def _this_machine():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    return {"platform": "cpu", "cpu": model, "cores": os.cpu_count(), "tensorflow": tf.__version__}


def _write(path, record):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) if isinstance(record, dict) else record, encoding="utf-8")


@pytest.mark.parametrize(
    "given, platform, expected",
    [
        (None, "cpu", False), (None, "gpu", True), (None, "tpu", True),
        (True, "cpu", True), (False, "gpu", False), (False, "tpu", False),
    ],
)
def test_given_value_wins_else_the_platform_default(given, platform, expected):
    assert speed.resolve_jit_compile(given, platform) is expected


def test_bad_values_name_the_setting():
    with pytest.raises(ValueError, match=r"^jit_compile='yes' must be True, False or None"):
        speed.resolve_jit_compile("yes", "cpu")
    with pytest.raises(ValueError, match=r"^platform='npu' is not one of cpu, gpu, tpu"):
        speed.resolve_jit_compile(None, "npu")


def test_platform_here():
    assert speed.current_platform(use_tpu=True) == "tpu"
    assert speed.current_platform() in ("cpu", "gpu")


def test_resolved_for_this_process():
    assert speed.jit_compile_for(None, use_tpu=True) is True
    assert speed.jit_compile_for(False, use_tpu=True) is False
    assert speed.jit_compile_for(True) is True


@pytest.mark.skipif(platform.system() != "Linux" or tf.config.list_physical_devices("GPU"), reason="a Linux CPU")
class TestMeasuredChoice:
    def test_the_file_is_where_the_variable_says_else_in_the_cache(self, _speed_file, monkeypatch):
        assert speed.speed_file() == str(_speed_file)
        monkeypatch.delenv(speed.SPEED_FILE_VARIABLE)
        assert speed.speed_file() == os.path.expanduser("~/.cache/bert_tf/speed_defaults.json")

    def test_a_missing_file_falls_back_to_the_cpu_default_and_says_how_to_measure(self):
        choice = speed.choose_jit_compile(None)
        expected = "the CPU default; measure this machine with `python bench/finetuning.py --save_defaults`"
        assert choice == (False, expected, None)

    @pytest.mark.parametrize("saved", [True, False])
    def test_the_saved_choice_is_used_on_a_matching_signature(self, _speed_file, saved):
        _write(_speed_file, {"signature": _this_machine(), "jit_compile": saved})
        assert speed.choose_jit_compile(None) == (saved, f"measured on this machine ({_speed_file})", None)

    @pytest.mark.parametrize("key, other", [("cpu", "Another CPU"), ("cores", 1024), ("tensorflow", "1.15.0"),
                                            ("platform", "gpu")])
    def test_another_machines_choice_is_not_used(self, _speed_file, key, other):
        _write(_speed_file, {"signature": {**_this_machine(), key: other}, "jit_compile": True})
        choice = speed.choose_jit_compile(None)
        assert choice.value is False and choice.source.startswith("the CPU default") and choice.warning is None

    @pytest.mark.parametrize("text", ["{not json", '["a list"]', '{"signature": {}}', '{"jit_compile": "yes"}'])
    def test_a_corrupt_file_falls_back_with_a_warning_naming_it(self, _speed_file, text):
        _write(_speed_file, text)
        choice = speed.choose_jit_compile(None)
        assert choice.value is False and choice.source.startswith("the CPU default")
        assert choice.warning.startswith(f"{_speed_file} is not a saved speed choice (")
        assert choice.warning.endswith("; it is ignored") and "\n" not in choice.warning

    def test_an_explicit_value_wins_over_the_file(self, _speed_file):
        _write(_speed_file, {"signature": _this_machine(), "jit_compile": True})
        assert speed.choose_jit_compile(False) == (False, "given", None)
        _write(_speed_file, "{not json")
        assert speed.choose_jit_compile(True) == (True, "given", None)

    def test_saved_then_read_back_replacing_the_old_file(self, _speed_file):
        assert speed.save_measured(True, 1.3) == str(_speed_file)
        record = json.loads(_speed_file.read_text(encoding="utf-8"))
        assert record == {"signature": _this_machine(), "choices": {"jit_compile": {
            "value": True, "xla_speedup": 1.3, "measured_by": "python bench/finetuning.py --save_defaults"}}}
        assert speed.jit_compile_for(None) is True
        # A writer killed mid-write left its temporary: the next save removes it.
        left = _speed_file.parent / f".{_speed_file.name}.{dead_owner_tag()}.abcd1234.tmp"
        left.write_text('{"half', encoding="utf-8")
        speed.save_measured(False, 0.6)
        assert speed.jit_compile_for(None) is False
        assert os.listdir(_speed_file.parent) == [_speed_file.name]  # no temporary file left


@pytest.mark.skipif(platform.system() != "Linux" or tf.config.list_physical_devices("GPU"), reason="a Linux CPU")
@pytest.mark.parametrize("given, saved, lines", [
    (None, None, [("info", "jit_compile=False: the CPU default; measure this machine with "
                           "`python bench/finetuning.py --save_defaults`")]),
    (None, True, [("info", "jit_compile=True: measured on this machine ({path})")]),
    (None, "{", [("warning", "{path} is not a saved speed choice (JSONDecodeError: "),
                 ("info", "jit_compile=False: the CPU default; measure")]),
    (False, True, [("info", "jit_compile=False: given")]),
])
def test_the_scripts_log_the_value_and_where_it_came_from(_speed_file, monkeypatch, given, saved, lines):
    from bert_tf import kernels
    from bert_tf.training import prepare
    from bert_tf.training.settings import TrainingSettings

    if saved is not None:
        _write(_speed_file, {"signature": _this_machine(), "jit_compile": saved} if saved is True else saved)
    logged = []
    monkeypatch.setattr(prepare.logging, "info", lambda f, *a: logged.append(("info", f % a)))
    monkeypatch.setattr(prepare.logging, "warning", lambda f, *a: logged.append(("warning", f % a)))
    flag_values = types.SimpleNamespace(
        output_dir="/o", train_batch_size=8, learning_rate=1e-4, save_checkpoints_steps=10, optimizer="adamw",
        gradient_accumulation_steps=1, steps_per_execution=None, iterations_per_loop=10, keep_checkpoints=1,
        jit_compile=given, random_seed=1, distribution_strategy=None, use_tpu=False, num_gpus=0, num_cpu_devices=0,
    )
    settings = prepare.loop_settings(TrainingSettings, flag_values)
    assert settings.jit_compile is (given if given is not None else saved is True)
    # First the CPU kernels' choice, made before TensorFlow loaded (bert_tf.kernels).
    lines = [("info", "oneDNN on: " if kernels.effective() else "oneDNN off: "), *lines]
    assert len(logged) == len(lines)
    for (level, text), (want_level, want) in zip(logged, lines, strict=True):
        assert level == want_level and text.startswith(want.format(path=_speed_file)), text


FINE_TUNING = {"value": False, "xla_speedup": 0.6, "measured_by": "python bench/finetuning.py --save_defaults"}


@pytest.mark.skipif(platform.system() != "Linux" or tf.config.list_physical_devices("GPU"), reason="a Linux CPU")
class TestSeveralChoicesInOneFile:
    def _saved(self, path):
        return json.loads(path.read_text(encoding="utf-8"))

    def test_saving_one_choice_keeps_the_other_of_the_same_machine(self, _speed_file):
        _write(_speed_file, {"signature": _this_machine(), "choices": {"jit_compile": FINE_TUNING}})
        speed.save_measured(True, 1.25, name="serving_jit_compile", figures={"p50_speedup": 1.1})
        serving = {"value": True, "xla_speedup": 1.25, "p50_speedup": 1.1,
                   "measured_by": "python bench/serving.py --save_defaults"}
        assert self._saved(_speed_file) == {"signature": _this_machine(),
                                            "choices": {"jit_compile": FINE_TUNING, "serving_jit_compile": serving}}
        # And the other way round: the fine-tuning measurement again keeps the serving one.
        speed.save_measured(True, 1.4)
        choices = self._saved(_speed_file)["choices"]
        assert choices["serving_jit_compile"] == serving and choices["jit_compile"]["value"] is True
        assert choose_serving_jit_compile(None, None).value is True
        assert speed.choose_jit_compile(None).value is True
        assert sorted(os.listdir(_speed_file.parent)) == [_speed_file.name]

    @pytest.mark.parametrize("record", [
        {"signature": {**_this_machine(), "cpu": "Another CPU"}, "choices": {"jit_compile": FINE_TUNING}},
        "{not json",
    ])
    def test_another_machines_or_an_unreadable_file_is_replaced(self, _speed_file, record):
        _write(_speed_file, record)
        speed.save_measured(False, 0.9, name="serving_jit_compile")
        saved = self._saved(_speed_file)
        assert saved["signature"] == _this_machine() and list(saved["choices"]) == ["serving_jit_compile"]

    def test_a_file_of_the_first_version_reads_as_its_fine_tuning_choice_and_is_kept(self, _speed_file):
        first = {"signature": _this_machine(), "jit_compile": True, "xla_speedup": 1.2,
                 "measured_by": "python bench/finetuning.py --save_defaults"}
        _write(_speed_file, first)
        assert speed.choose_jit_compile(None) == (True, f"measured on this machine ({_speed_file})", None)
        # It holds no serving choice: float exports keep the built-in default, with no warning.
        choice = choose_serving_jit_compile(None, None)
        assert choice == (False, "the CPU default; measure this machine with `python bench/serving.py "
                                 "--save_defaults`", None)
        speed.save_measured(True, 1.1, name="serving_jit_compile")
        choices = self._saved(_speed_file)["choices"]
        assert choices["jit_compile"] == {"value": True, "xla_speedup": 1.2, "measured_by": first["measured_by"]}
        assert choices["serving_jit_compile"]["value"] is True

    @pytest.mark.parametrize("saved", [True, False])
    def test_a_float_export_takes_this_machines_serving_choice(self, _speed_file, saved):
        _write(_speed_file, {"signature": _this_machine(), "choices": {
            "jit_compile": {**FINE_TUNING, "value": not saved}, "serving_jit_compile": {"value": saved}}})
        assert choose_serving_jit_compile(None, None) == (saved, f"measured on this machine ({_speed_file})",
                                                                None)

    def test_int8_is_on_and_a_given_value_wins_without_reading_the_file(self, _speed_file):
        _write(_speed_file, {"signature": _this_machine(), "choices": {"serving_jit_compile": {"value": False}}})
        value, source, warning = choose_serving_jit_compile(None, "int8")
        assert value is True and warning is None
        assert source.startswith("on with int8 weights") and "4x slower outside XLA" in source
        _write(_speed_file, "{not json")
        assert choose_serving_jit_compile(False, "int8") == (False, "given", None)
        assert choose_serving_jit_compile(True, None) == (True, "given", None)
        assert choose_serving_jit_compile(None, "int8").warning is None

    def test_options_measured_without_xla_turn_it_off_unless_given_without_reading_the_file(self, _speed_file):
        _write(_speed_file, "{not json")  # read, it would warn
        without = ["--mixed_precision=bf16", "--another_option"]
        assert choose_serving_jit_compile(None, None, measured_without=without) == (
            False, "--mixed_precision=bf16 --another_option", None)
        assert choose_serving_jit_compile(True, None, measured_without=without) == (True, "given", None)
        assert choose_serving_jit_compile(None, "int8", measured_without=without).value is True
        # bf16 is measured without XLA: its format says so, naming its setting.
        assert choose_serving_jit_compile(None, None, mixed_precision="bf16") == (False, "mixed_precision=bf16", None)
        assert choose_serving_jit_compile(True, None, mixed_precision="bf16") == (True, "given", None)

    @pytest.mark.parametrize("text", ["{not json", '{"signature": {}, "choices": {"serving_jit_compile": {}}}',
                                      '{"signature": {}, "choices": {"serving_jit_compile": {"value": 1}}}'])
    def test_an_unreadable_file_warns_and_float_exports_keep_the_built_in_default(self, _speed_file, text):
        _write(_speed_file, text)
        value, source, warning = choose_serving_jit_compile(None, None)
        assert value is False and source.startswith("the CPU default; measure this machine with `python bench/serving")
        assert warning.startswith(f"{_speed_file} is not a saved speed choice (") and warning.endswith("ignored")

    def test_only_known_choices_are_saved(self, _speed_file):
        with pytest.raises(ValueError, match=r"^name='serving' is not one of jit_compile, serving_jit_compile, "
                                             r"onednn_training, onednn_prediction, onednn_serving$"):
            speed.save_measured(True, 1.0, name="serving")
        assert not _speed_file.exists()


def test_a_float_export_on_an_accelerator_is_compiled(monkeypatch):
    monkeypatch.setattr(speed, "current_platform", lambda use_tpu=False: "gpu")
    assert choose_serving_jit_compile(None, None) == (True, "the GPU default", None)
    assert choose_serving_jit_compile(False, None) == (False, "given", None)
