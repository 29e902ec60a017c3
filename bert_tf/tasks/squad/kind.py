"""SQuAD's entry in the registry of task kinds (`bert_tf.runs.registry`): its model, head (run_squad's
`cls/squad/...` variables), record fields, Task, exporter, FineTuning and settings."""

from bert_tf.models import BertSpanLabeler
from bert_tf.runs.kinds import FROM_SETTINGS, TaskKind

KIND = TaskKind(
    name="squad", script="run_squad.py", model_class=BertSpanLabeler, head_layer="span_head",
    head_names=("cls/squad/output_weights", "cls/squad/output_bias"),
    record_fields=dict.fromkeys(("version_2_with_negative", "doc_stride", "max_query_length"), FROM_SETTINGS),
    task="bert_tf.tasks.squad.task:SquadTask", exporter="bert_tf.tasks.squad.export:export_run",
    fine_tuning="bert_tf.tasks.squad.fine_tuning:SquadFineTuning",
    settings="bert_tf.tasks.squad.settings:Settings",
    legacy_names=("span_labeler",),
    hf_architecture="BertForQuestionAnswering", hf_head="qa_outputs", hf_pooler=False, from_original=True,
)
