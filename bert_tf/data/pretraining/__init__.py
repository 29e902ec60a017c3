"""Pre-training data: instances from a text corpus (the original `create_pretraining_data.py`),
written to and read from the original's TFRecords, with dynamic masking.

This package's own import is light: `SHARD_WORKER` names the function a `WorkerPool` started
before TensorFlow runs in each worker.
"""

# What create_pretraining_data's worker processes run (see `bert_tf.data.worker_pool`).
SHARD_WORKER = "bert_tf.data.pretraining.creation:work_on_shards"
