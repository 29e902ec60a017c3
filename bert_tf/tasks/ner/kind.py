"""NER's entry in the registry of task kinds (`bert_tf.runs.registry`): its model (and the
feature-based tagger), head, record fields, Task, exporter, FineTuning and settings."""

from bert_tf.models import BertFeatureTagger, BertTokenClassifier
from bert_tf.runs.kinds import FROM_SETTINGS, TaskKind
from bert_tf.tasks.classifier.kind import CLASSIFIER_HEAD


def _model_args(record):
    args = {"num_classes": len(record.labels)}
    if record.feature_based is not None:  # BertFeatureTagger's (the kind's model_variant)
        args["feature_based"] = record.feature_based
        if record.lstm_units is not None:
            args["lstm_units"] = record.lstm_units
    return args


KIND = TaskKind(
    name="ner", script="run_ner.py", model_class=BertTokenClassifier, head_layer="classifier",
    head_names=CLASSIFIER_HEAD,
    # lstm_units is kept only with feature_based (a fine-tuned run's file is as before that option).
    record_fields={"label_kind": "token", "labels": (), "window_context_words": FROM_SETTINGS,
                   "feature_based": FROM_SETTINGS, "lstm_units": None},
    task="bert_tf.tasks.ner.task:NerTask", exporter="bert_tf.tasks.ner.export:export_run",
    fine_tuning="bert_tf.tasks.ner.fine_tuning:NerFineTuning",
    settings="bert_tf.tasks.ner.settings:Settings",
    model_args=_model_args, legacy_names=("token_classifier",),
    label_kinds=("token",),
    hf_architecture="BertForTokenClassification", hf_head="classifier", hf_pooler=False,
    model_variant=lambda record: BertFeatureTagger if record.feature_based is not None else None,
)
