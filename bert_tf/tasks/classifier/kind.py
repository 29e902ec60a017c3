"""The classifier's entry in the registry of task kinds (`bert_tf.runs.registry`): its model, head,
record fields, Task, exporter, FineTuning and settings."""

from bert_tf.models import BertClassifier
from bert_tf.runs.kinds import FROM_SETTINGS, TaskKind

# run_classifier.create_model's top-level head variables; the token classifier (one output per tag)
# and the multiple-choice model (one score) use the classifier's.
CLASSIFIER_HEAD = ("output_weights", "output_bias")


def _outputs(record):
    return {"num_classes": 1 if record.label_kind == "regression" else len(record.labels)}


KIND = TaskKind(
    name="classifier", script="run_classifier.py", model_class=BertClassifier, head_layer="classifier",
    head_names=CLASSIFIER_HEAD, record_fields={"label_kind": "single", "labels": (), "pair": True,
                                               **dict.fromkeys(("max_windows", "doc_stride", "window_pooling"),
                                                               FROM_SETTINGS)},
    task="bert_tf.tasks.classifier.task:ClassifierTask",
    exporter="bert_tf.tasks.classifier.export:export_run",
    fine_tuning="bert_tf.tasks.classifier.fine_tuning:ClassifierFineTuning",
    settings="bert_tf.tasks.classifier.settings:Settings", model_args=_outputs,
    label_kinds=("single", "regression", "multi"),
    # A record that names no kind (no "model" either) was written by the first release, which
    # fine-tuned classifiers only.
    unnamed_records=True,
    hf_architecture="BertForSequenceClassification", hf_head="classifier", from_original=True,
)
