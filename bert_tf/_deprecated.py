"""Names that moved, kept importable from their old places as deprecated aliases.

The `MOVED` table maps an old module -> {old name: "new module:new name"}, and the old module's
`__getattr__` (PEP 562) asks it for a name it no longer has. The new place is named by string and
imported only when an old name is used, as `bert_tf.runs.registry` names task modules: an alias may point up the layers
(`bert_tf.export.export_classifier` -> `bert_tf.tasks.classifier.export`) without the lower
package importing the higher one. Each use warns with a DeprecationWarning naming the new place;
the alias is the new place's very object.

This module holds every alias of the package, in one table (`MOVED`): the top package's old
modules (`bert_tf.metrics`, `bert_tf.squad_metrics`, `bert_tf.conlleval`, which the README of
their time named), then those of `bert_tf.data`, `bert_tf.export`, `bert_tf.tasks` and
`bert_tf.training`. CHANGELOG.md lists them; each lives until the next minor version.
"""

import importlib
import warnings


def same_names(new_module, names):
    """{name: "new_module:name"} for the space-separated `names`, which kept their names."""
    return {name: f"{new_module}:{name}" for name in names.split()}


def resolver(moved):
    """The function an old module's `__getattr__` calls: (module, name) -> the moved object."""

    def resolve(module, name):
        target = moved.get(module, {}).get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new_module, new_name = target.split(":")
        # stacklevel 3: past this function and the module's __getattr__, to the line using the name.
        warnings.warn(
            f"{module}.{name} moved to {new_module}.{new_name}; import it from there",
            DeprecationWarning, stacklevel=3,
        )
        return getattr(importlib.import_module(new_module), new_name)

    return resolve


MOVED = {
    "bert_tf.metrics": same_names(
        "bert_tf.tasks.classifier.metrics", "accuracy f1_score matthews_corrcoef multilabel_f1 pearson spearman"
    ),
    "bert_tf.squad_metrics": same_names(
        "bert_tf.tasks.squad.metrics",
        "apply_no_ans_threshold check_na_probs check_na_probs_cover check_predictions compute_exact compute_f1 "
        "evaluate evaluate_v1 evaluate_v2 exact_match_score_v1 f1_score_v1 find_best_thresh get_raw_scores "
        "get_tokens load_dataset load_na_probs load_predictions make_eval_dict make_qid_to_has_ans "
        "missing_predictions normalize_answer resolve_version",
    ),
    "bert_tf.conlleval": same_names(
        "bert_tf.tasks.ner.conlleval", "Counts OUTSIDE PREFIXES Report entities evaluate is_valid_tag split_tag"
    ),

    # The old names of `bert_tf.data`'s modules that moved: the two modules the README of their time showed, the
    # classification readers' (`classifier_tasks`, now in `bert_tf.tasks.classifier`, which this layer must not
    # import) and the pre-training input pipeline's (`pipelines`).
    "bert_tf.data.classifier_tasks": {
        **same_names(
            "bert_tf.tasks.classifier.processors",
            "DataProcessor InputExample TsvFile TsvTask check_label find_data_file register_task",
        ),
        **same_names("bert_tf.tasks.classifier.catalog", "create_processor processor_for_tfds read_split task_names"),
        **same_names(
            "bert_tf.data.text_files", "CSV_FIELD_SIZE_LIMIT file_exists format_names read_table read_text_lines"
        ),
    },
    "bert_tf.data.pipelines": {
        **same_names("bert_tf.data.pretraining.pipeline", "DynamicMasking pretraining_dataset remask unmask"),
        **same_names("bert_tf.data.batching", "ordered_batches"),
    },

    # The old names of `bert_tf.export`: the fine-tuned models' exports, which moved to their tasks' folders
    # (`bert_tf.tasks.<kind>.export`) and took their kinds' names. They point up the layers, so they are imported only
    # when an old name is used.
    "bert_tf.export": {
        "export_classifier": "bert_tf.tasks.classifier.export:export_classifier",
        "export_multiple_choice": "bert_tf.tasks.swag.export:export_swag",
        "export_span_labeler": "bert_tf.tasks.squad.export:export_squad",
        "export_token_classifier": "bert_tf.tasks.ner.export:export_ner",
    },

    # The old names of `bert_tf.tasks` and its folders: the Task contract, which moved to `bert_tf.training.task` (the
    # one loop's layer), the task kinds and run record, which moved to the run core (`bert_tf.runs`), and the input
    # folders' copies of the encoder's input names (`bert_tf.models.INPUT_NAMES`); imported only when an old name is
    # used, so that importing this package still loads nothing.
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

    # The old names of `bert_tf.training`'s modules: pre-training re-exported the loop's gradient clipping norm, which
    # lives in `bert_tf.training.trainer`; the text-in exports' XLA rule (`speed.choose_serving_jit_compile`,
    # INT8_SOURCE) lives with the serving formats in `bert_tf.export.serving`, a layer up, so it is imported only when
    # an old name is used; the run's check of an earlier run in its output folder is `run.check_earlier_run`
    # (`check_output_dir` is `bert_tf.io_utils`' check that a folder can be written).
    "bert_tf.training.pretraining": {"CLIP_NORM": "bert_tf.training.trainer:CLIP_NORM"},
    "bert_tf.training.run": {"check_output_dir": "bert_tf.training.run:check_earlier_run"},
    "bert_tf.training.speed": same_names("bert_tf.export.serving", "INT8_SOURCE choose_serving_jit_compile"),
}
moved = resolver(MOVED)
