"""The sentence embedder's entry in the registry of task kinds (`bert_tf.runs.registry`): its model
(no weights beyond the encoder's), record fields, Task, exporter, FineTuning, settings and the
dev figures a search chooses by."""

from bert_tf.models import BertSentenceEmbedder
from bert_tf.runs.kinds import FROM_SETTINGS, TaskKind

KIND = TaskKind(
    name="embedder", script="run_sentence_embedding.py", model_class=BertSentenceEmbedder, head_layer="",
    head_names=(),
    record_fields=dict.fromkeys(("pooling", "normalize", "similarity_scale", "max_windows", "doc_stride"),
                                FROM_SETTINGS),
    task="bert_tf.tasks.embedder.task:EmbedderTask", exporter="bert_tf.tasks.embedder.export:export_run",
    fine_tuning="bert_tf.tasks.embedder.fine_tuning:EmbedderFineTuning",
    settings="bert_tf.tasks.embedder.settings:Settings",
    folder_record="bert_tf.tasks.embedder.run:folder_record",
    folder_files="bert_tf.checkpoints.sentence_transformers:embedder_files",
    model_args=lambda record: {"pooling": record.pooling or "mean", "normalize": bool(record.normalize)},
    dev_metrics=("mrr_at_10", "spearman"),
)
