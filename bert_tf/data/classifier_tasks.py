"""The old home of the classification tasks' readers and registry, kept because task modules
written for earlier releases import from it (the README showed it). New code imports
`bert_tf.tasks.classifier.processors` and `.catalog`."""

from bert_tf.tasks.classifier.catalog import create_processor, processor_for_tfds, read_split, task_names
from bert_tf.tasks.classifier.processors import DataProcessor, InputExample, TsvFile, TsvTask, register_task

__all__ = [
    "DataProcessor", "InputExample", "TsvFile", "TsvTask", "create_processor", "processor_for_tfds", "read_split",
    "register_task", "task_names",
]
