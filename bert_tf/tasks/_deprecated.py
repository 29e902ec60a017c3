"""The old names of `bert_tf.tasks` and its folders (see `bert_tf._deprecated`): the Task
contract, which moved to `bert_tf.training.task` (the one loop's layer), the task kinds and run
record, which moved to the run core (`bert_tf.runs`), and the input folders' copies of the
encoder's input names (`bert_tf.models.INPUT_NAMES`); imported only when an old name is used, so
that importing this package still loads nothing."""

from bert_tf._deprecated import resolver, same_names

MOVED = {
    "bert_tf.tasks": {"Task": "bert_tf.training.task:Task"},
    "bert_tf.tasks.classifier.inputs": {"ENCODER_INPUTS": "bert_tf.models:INPUT_NAMES"},
    "bert_tf.tasks.squad.inputs": {"ENCODER_INPUTS": "bert_tf.models:INPUT_NAMES"},
    # One name per step of every task's run: its factory is build_task, its matching rule fields_to_match.
    "bert_tf.tasks.classifier.run": {
        "classifier_task": "bert_tf.tasks.classifier.run:build_task",
        "same_fields": "bert_tf.tasks.classifier.run:fields_to_match",
    },
    "bert_tf.tasks.record": same_names(
        "bert_tf.runs.record", "FILE_NAME RESUMED_FIELDS RunRecord adapters read run_directory"
    ),
    "bert_tf.tasks.registry": same_names("bert_tf.runs.registry", "KINDS TaskKind get of_hf_architecture of_model"),
}
moved = resolver(MOVED)
