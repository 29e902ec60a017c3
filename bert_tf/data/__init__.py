"""Turning text into model inputs: sentence-pair packing, TFRecords, tf.data pipelines."""
