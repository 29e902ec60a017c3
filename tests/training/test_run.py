"""A fine-tuning run's folder checks (`bert_tf.training.run`) without a script: what an
output_dir may hold, and the messages naming the setting at fault (scripts turn them into flags)."""

import dataclasses
import json

import pytest
import tensorflow as tf

from bert_tf.runs.record import RunRecord
from bert_tf.training import run

MRPC = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"), do_lower_case=True, max_seq_length=128)
SAME = ("task_name", "label_kind", "labels")


def _leave(folder, **fields):
    folder.mkdir(exist_ok=True)
    values = {"kind": "classifier", "task_name": "mrpc", "labels": ["0", "1"], "do_lower_case": True,
              "max_seq_length": 128, **fields}
    (folder / "fine_tuning_task.json").write_text(json.dumps(values), encoding="utf-8")


def test_an_empty_or_missing_folder_and_the_same_run_pass(tmp_path):
    assert run.check_earlier_run(str(tmp_path / "new"), MRPC, SAME) == []
    assert run.check_earlier_run(str(tmp_path), MRPC, SAME) == []
    _leave(tmp_path)
    assert run.check_earlier_run(str(tmp_path), MRPC, SAME) == []


def test_another_task_is_refused_naming_what_differs(tmp_path):
    _leave(tmp_path, task_name="cola")
    with pytest.raises(ValueError) as e:
        run.check_earlier_run(str(tmp_path), MRPC, SAME)
    assert str(e.value) == f"output_dir={tmp_path} holds a run of task 'cola', not 'mrpc': use another output_dir"
    _leave(tmp_path, labels=["a", "b", "c"])
    with pytest.raises(ValueError) as e:
        run.check_earlier_run(str(tmp_path), MRPC, SAME)
    assert str(e.value) == (
        f"output_dir={tmp_path} holds a run of task 'mrpc' with labels ['a', 'b', 'c'], not ['0', '1']: "
        "use another output_dir"
    )
    # Fields not asked to match may differ (evaluating mnli-mm on an mnli run).
    assert run.check_earlier_run(str(tmp_path), MRPC, ("label_kind",)) == []


def test_another_casing_is_refused_and_another_length_warned(tmp_path):
    _leave(tmp_path, do_lower_case=False)
    with pytest.raises(ValueError) as e:
        run.check_earlier_run(str(tmp_path), MRPC, SAME)
    assert str(e.value) == (
        f"do_lower_case=True, but the model in output_dir={tmp_path} was fine-tuned with do_lower_case=False"
    )
    _leave(tmp_path, max_seq_length=64)
    assert run.check_earlier_run(str(tmp_path), MRPC, SAME) == [
        f"max_seq_length=128, but the model in {tmp_path} was fine-tuned with 64: inputs are cut differently"
    ]


def test_checkpoints_without_a_record_are_another_kind_of_run(tmp_path):
    tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    with pytest.raises(ValueError) as e:
        run.check_earlier_run(str(tmp_path), MRPC, SAME)
    assert str(e.value) == (
        f"output_dir={tmp_path} holds checkpoints of another kind of run (no fine_tuning_task.json): use another "
        f"output_dir (to start from those weights, pass init_checkpoint={tmp_path})"
    )


def test_a_run_with_checkpoints_is_resumed_or_restored_with_its_own_config_only(tmp_path):
    """Checked before any work: another config would fail at the restore, after reading and
    encoding every input (or read the weights into a model computing otherwise)."""
    from bert_tf.config import BertConfig

    config = BertConfig(vocab_size=30, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, type_vocab_size=2)
    _leave(tmp_path)
    config.to_json_file(str(tmp_path / "bert_config.json"))
    wider = dataclasses.replace(config, hidden_size=64)
    assert run.check_earlier_run(str(tmp_path), MRPC, SAME, wider) == []  # no checkpoint yet: it starts afresh
    tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    assert run.check_earlier_run(str(tmp_path), MRPC, SAME, config) == []
    # Dropout and the initializer's range leave the checkpoints readable as they are.
    assert run.check_earlier_run(str(tmp_path), MRPC, SAME, dataclasses.replace(
        config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.2, initializer_range=0.1)) == []
    relu = dataclasses.replace(config, hidden_act="relu")
    for other, name, ours, theirs in ((wider, "hidden_size", 64, 32), (relu, "hidden_act", "'relu'", "'gelu'")):
        with pytest.raises(ValueError) as e:
            run.check_earlier_run(str(tmp_path), MRPC, SAME, other, "bert_config_file=/x/bert_config.json")
        assert str(e.value) == (
            f"bert_config_file=/x/bert_config.json: its {name} is {ours}, but the model in output_dir={tmp_path} "
            f"was fine-tuned with {theirs} ({tmp_path / 'bert_config.json'}): give that config, or use another "
            "output_dir")


def test_training_steps_are_the_originals():
    # int(examples / batch * epochs), and int(steps * warmup_proportion).
    assert run.training_steps(3668, 32, 3.0, 0.1) == (343, 34)
    assert run.training_steps(10, 32, 1.0, 0.1) == (0, 0)


def test_other_lora_settings_are_refused(tmp_path):
    # A run's checkpoints hold its adapters (or none): resumed or evaluated with others, they would
    # be read into a model of another shape, or their adapters dropped without a word.
    _leave(tmp_path, lora_rank=4, lora_alpha=8.0)
    with pytest.raises(ValueError) as e:
        run.check_earlier_run(str(tmp_path), MRPC, SAME)
    assert str(e.value) == (
        f"lora_rank=0, but the model in output_dir={tmp_path} was fine-tuned with lora_rank=4, lora_alpha=8.0: its "
        "checkpoints hold those adapters (or none); give the same, or use another output_dir"
    )
    assert run.check_earlier_run(str(tmp_path), dataclasses.replace(MRPC, lora_rank=4, lora_alpha=8),
                                SAME) == []
    with pytest.raises(ValueError, match=r"^lora_rank=4, lora_alpha=4.0, but .* with lora_rank=4, lora_alpha=8.0:"):
        run.check_earlier_run(str(tmp_path), dataclasses.replace(MRPC, lora_rank=4), SAME)


def test_a_run_stopped_before_its_first_checkpoint_may_be_run_again_with_other_settings(tmp_path):
    import tensorflow as tf

    from bert_tf.runs.record import write_training_settings
    from bert_tf.training.run import check_resumed_settings

    write_training_settings(str(tmp_path), {"learning_rate": 1e-3, "input_file": ["/d/a.tfrecord"]})
    # No step was taken: nothing to resume, the rerun may correct any setting.
    assert check_resumed_settings(str(tmp_path), {"learning_rate": 2e-3, "input_file": ["/d/b.tfrecord"]}) == []
    tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    with pytest.raises(ValueError, match=r"^input_file=\['/d/b.tfrecord'\], but the run in output_dir=.* was trained "
                                         r"with input_file=\['/d/a.tfrecord'\]: a resumed run"):
        check_resumed_settings(str(tmp_path), {"input_file": ["/d/b.tfrecord"]})


def test_the_length_warning_names_the_flag_where_the_caller_writes_flags(tmp_path):
    from bert_tf.errors import reported

    MRPC.write(str(tmp_path))
    longer = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"), max_seq_length=256)
    with reported(flag_names=("max_seq_length",)):
        warnings = run.check_earlier_run(str(tmp_path), longer, ("labels",))
    assert warnings == [f"--max_seq_length=256, but the model in {tmp_path} was fine-tuned with 128: inputs are cut "
                        "differently"]
