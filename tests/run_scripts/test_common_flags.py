"""The scripts' shared helpers that need no flags defined: library messages written with flags."""

import pytest

from bert_tf.errors import as_flags  # deprecated: messages write their settings with `shown`

NAMES = ("output_dir", "init_checkpoint", "do_lower_case")


def test_settings_become_flags():
    assert as_flags("do_lower_case=False, but the model in output_dir=/a was fine-tuned with do_lower_case=True",
                    NAMES) == (
        "--do_lower_case=False, but the model in --output_dir=/a was fine-tuned with --do_lower_case=True"
    )
    assert as_flags("use another output_dir (pass init_checkpoint=/a)", NAMES) == (
        "use another --output_dir (pass --init_checkpoint=/a)"
    )
    assert as_flags("init_checkpoint", NAMES) == "--init_checkpoint"


def test_names_inside_paths_and_words_stay():
    message = "output_dir=/tmp/output_dir/run.output_dir holds my_output_dir and output_dirs, not --output_dir"
    assert as_flags(message, NAMES) == (
        "--output_dir=/tmp/output_dir/run.output_dir holds my_output_dir and output_dirs, not --output_dir"
    )


def test_library_call_writes_the_named_settings_as_flags():
    from bert_tf.errors import shown
    from run_scripts.flag_settings import library_call

    def missing():
        raise FileNotFoundError(f"no dev file 'valid.txt' in {shown.data_dir}=/d (/d/valid.txt does not exist)")

    with pytest.raises(SystemExit) as e:
        library_call(missing, flag_names=("data_dir",))
    assert str(e.value).endswith(": error: no dev file 'valid.txt' in --data_dir=/d (/d/valid.txt does not exist)")
    with pytest.raises(SystemExit) as e:
        library_call(missing, "in a.json: ")
    assert str(e.value).endswith(
        ": error: in a.json: no dev file 'valid.txt' in data_dir=/d (/d/valid.txt does not exist)"
    )


@pytest.mark.parametrize(
    "platform, argv, expected, logged",
    [
        ("cpu", [], (1, False), "length_bucket=1: the default without XLA"),
        ("cpu", ["--jit_compile"], (8, False), "length_bucket=8: the default with XLA"),
        ("gpu", [], (8, False), "length_bucket=8: the default with XLA"),  # XLA's GPU default
        ("gpu", ["--nojit_compile"], (1, False), "length_bucket=1: the default without XLA"),
        ("cpu", ["--jit_compile", "--length_bucket=4", "--group_by_length"], (4, True), None),
        ("cpu", ["--pad_to_max_seq_length"], (None, False), None),
        ("cpu", ["--use_tpu"], (None, False), None),
        ("cpu", ["--distribution_strategy=tpu"], (None, False), None),
        # A script without --jit_compile (extract_features): Keras compiles predict on a GPU only.
        ("cpu", None, (1, False), "length_bucket=1: the default without XLA"),
        ("gpu", None, (8, False), "length_bucket=8: the default with XLA"),
    ],
)
def test_the_default_bucket_follows_the_models_xla_choice(platform, argv, expected, logged, caplog, monkeypatch):
    from absl import logging

    from bert_tf.training import speed
    from run_scripts import flag_settings

    monkeypatch.setattr(speed, "current_platform", lambda use_tpu=False: "tpu" if use_tpu else platform)
    values = _padding_flags(argv)
    logging.set_verbosity(logging.INFO)
    with caplog.at_level("INFO"):
        assert flag_settings.padding_from_flags(values) == expected
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("length_bucket=")]
    assert said == ([logged] if logged else [])


def _padding_flags(argv):
    """The flags `padding_settings` reads, parsed from `argv` (None: a script without --jit_compile)."""
    from absl import flags

    values = flags.FlagValues()
    flags.DEFINE_integer("length_bucket", None, "", flag_values=values)
    flags.DEFINE_integer("max_seq_length", 128, "", flag_values=values)
    for name in ("pad_to_max_seq_length", "use_tpu", "group_by_length"):
        flags.DEFINE_bool(name, False, "", flag_values=values)
    flags.DEFINE_string("distribution_strategy", None, "", flag_values=values)
    flags.DEFINE_integer("num_gpus", 0, "", flag_values=values)
    flags.DEFINE_integer("num_cpu_devices", 0, "", flag_values=values)
    if argv is not None:
        flags.DEFINE_bool("jit_compile", None, "", flag_values=values)
    values(["script", *(argv or [])])
    return values


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--pad_to_max_seq_length", "--length_bucket=4"],
         "--length_bucket=4 has no use with --pad_to_max_seq_length: every batch is padded to --max_seq_length"),
        (["--use_tpu", "--length_bucket=4"],
         "--length_bucket=4 has no use with a TPU (static shapes): every batch is padded to --max_seq_length"),
        (["--length_bucket=1000"],
         "--length_bucket=1000 is above --max_seq_length=128: no batch is longer; give at most that"),
    ],
)
def test_a_bucket_that_would_be_dropped_or_never_reached_is_refused(argv, message):
    from run_scripts import flag_settings

    with pytest.raises(SystemExit) as e:
        flag_settings.padding_from_flags(_padding_flags([*argv, "--nojit_compile"]))
    assert str(e.value).endswith(f": error: {message}")
