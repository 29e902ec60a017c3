"""SWAG's entry in the registry of task kinds (`bert_tf.runs.registry`): its model, head, record
fields, Task, exporter, FineTuning and settings."""

from bert_tf.models import BertMultipleChoice
from bert_tf.runs.kinds import TaskKind
from bert_tf.tasks.classifier.kind import CLASSIFIER_HEAD
from bert_tf.tasks.swag.reader import NUM_CHOICES

KIND = TaskKind(
    name="swag", script="run_swag.py", model_class=BertMultipleChoice, head_layer="classifier",
    head_names=CLASSIFIER_HEAD, record_fields={"num_choices": NUM_CHOICES},
    task="bert_tf.tasks.swag.task:SwagTask", exporter="bert_tf.tasks.swag.export:export_run",
    fine_tuning="bert_tf.tasks.swag.fine_tuning:SwagFineTuning",
    settings="bert_tf.tasks.swag.settings:Settings",
    model_args=lambda record: {"num_choices": record.num_choices}, legacy_names=("multiple_choice",),
    hf_architecture="BertForMultipleChoice", hf_head="classifier",
)
