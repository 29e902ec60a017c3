"""Turning text into model inputs: sentence-pair packing, TFRecords, tf.data pipelines."""

# Its modules, imported by name (this package's own import loads none of them); `classifier_tasks`
# and `pipelines` are old homes kept as deprecated aliases.
__all__ = ["batching", "lengths", "pretraining", "sentence_pairs", "text_files", "tfds", "tfrecords", "worker_pool"]
