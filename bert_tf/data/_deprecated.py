"""The old names of `bert_tf.data`'s modules that moved (see `bert_tf._deprecated`): the two
modules the README of their time showed, the classification readers' (`classifier_tasks`, now in
`bert_tf.tasks.classifier`, which this layer must not import) and the pre-training input
pipeline's (`pipelines`)."""

from bert_tf._deprecated import resolver, same_names

MOVED = {
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
}
moved = resolver(MOVED)
