"""Names that moved, kept importable from their old places as deprecated aliases.

A package whose modules lost names keeps a `_deprecated.py` with a `MOVED` table, old module ->
{old name: "new module:new name"}, and the old module's `__getattr__` (PEP 562) asks that table
for a name it no longer has. The new place is named by string and imported only when an old name
is used, as `bert_tf.runs.registry` names task modules: an alias may point up the layers
(`bert_tf.export.export_classifier` -> `bert_tf.tasks.classifier.export`) without the lower
package importing the higher one. Each use warns with a DeprecationWarning naming the new place;
the alias is the new place's very object.

This module's own table holds the top package's old modules (`bert_tf.metrics`,
`bert_tf.squad_metrics`, `bert_tf.conlleval`, which the README of their time named).
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
}
moved = resolver(MOVED)
