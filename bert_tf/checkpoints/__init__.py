"""Checkpoint import/export (TensorFlow-specific: reads and writes TF checkpoints)."""

from bert_tf.checkpoints.original import (
    LoadReport,
    list_original_variables,
    load_original_checkpoint,
    original_variable_map,
    original_weights,
    save_original_checkpoint,
)
from bert_tf.checkpoints.restore import load_keras_model, restore, save_keras_model

__all__ = [
    "LoadReport",
    "list_original_variables",
    "load_original_checkpoint",
    "original_variable_map",
    "original_weights",
    "load_keras_model",
    "restore",
    "save_keras_model",
    "save_original_checkpoint",
]
