"""The one error type of a bad setting, and how a message names a setting: as the field to a
Python caller, as the flag within a script's `reported(flag_names=...)` block; no message is
rewritten after it is built."""

import ast
import os

import pytest

from bert_tf.errors import SettingError, reported, shown

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_setting_is_named_as_the_field_and_as_the_flag_only_where_the_caller_asks():
    assert (shown.output_dir, shown("lora_rank")) == ("output_dir", "lora_rank")
    with reported(flag_names=("output_dir",)):
        assert (shown.output_dir, shown.lora_rank) == ("--output_dir", "lora_rank")
        with reported():  # a nested block names its own settings only
            assert shown.output_dir == "output_dir"
        assert shown.output_dir == "--output_dir"
    assert shown.output_dir == "output_dir"


def test_the_same_check_reads_to_python_and_to_a_script(tmp_path):
    from bert_tf.training import search

    with pytest.raises(ValueError, match=r"^restarts=0: must be at least 1$"):
        search.grid(1e-3, 32, 3.0, 0, 12345)
    with pytest.raises(SettingError) as e, reported(flag_names=("restarts",)):
        search.grid(1e-3, 32, 3.0, 0, 12345)
    assert (str(e.value), e.value.setting) == ("--restarts=0: must be at least 1", "restarts")
    # A path or word that holds a setting's name is left as it is: only the name the message gives is a flag.
    from bert_tf.runs.record import check_not_search

    folder = tmp_path / "init_checkpoint"
    folder.mkdir()
    (folder / "search.json").write_text("{}")
    with pytest.raises(SettingError) as e, reported(flag_names=("init_checkpoint",)):
        check_not_search(str(folder), "init_checkpoint")
    assert str(e.value).startswith(f"--init_checkpoint={folder} holds a search (search.json): use --init_checkpoint=")


def test_as_flags_is_deprecated_and_nothing_calls_it():
    from bert_tf.errors import as_flags

    with pytest.warns(DeprecationWarning, match="shown"):
        assert as_flags("output_dir=/a", ("output_dir",)) == "--output_dir=/a"
    calls = []
    for top in ("bert_tf", "run_scripts"):
        for folder, _, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        tree = ast.parse(f.read(), path)
                    calls += [f"{path}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Call)
                              and getattr(node.func, "id", getattr(node.func, "attr", None)) == "as_flags"]
    assert not calls, calls
