"""The scripts' shared helpers that need no flags defined: library messages written with flags."""

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
