"""The scripts' shared helpers that need no flags defined: library messages written with flags."""

import pytest

from run_scripts.common_flags import as_flags

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
    from run_scripts.common_flags import library_call

    def missing():
        raise FileNotFoundError("no dev file 'valid.txt' in data_dir=/d (/d/valid.txt does not exist)")

    with pytest.raises(SystemExit) as e:
        library_call(missing, flag_names=("data_dir",))
    assert str(e.value).endswith(": error: no dev file 'valid.txt' in --data_dir=/d (/d/valid.txt does not exist)")
    with pytest.raises(SystemExit) as e:
        library_call(missing, "in a.json: ")
    assert str(e.value).endswith(
        ": error: in a.json: no dev file 'valid.txt' in data_dir=/d (/d/valid.txt does not exist)"
    )
