"""Pre-training as a task of the one loop: the masked-LM and next-sentence heads and losses
of the original `run_pretraining.py`, read from its TFRecords (TensorFlow), and the run's
settings under the original's flag names.

The masked-LM loss is sum(weights * xent) / (sum(weights) + 1e-5) and the next-sentence loss
the mean over all examples, both over the global batch (`normalizers`), as the original
computes them on one device. Without next-sentence prediction (the paper's "No NSP", §5.1) the
masked-LM loss is the whole loss, and no next-sentence sum, log or result exists.
"""

import dataclasses
import os

import tensorflow as tf

from bert_tf.data import tfrecords
from bert_tf.data.pretraining.pipeline import pretraining_dataset
from bert_tf.errors import shown
from bert_tf.models import (
    MASKED_LM_DENOMINATOR_EPSILON,
    BertEncoder,
    BertPretrainer,
    masked_lm_xent,
    next_sentence_xent,
)
from bert_tf.training.task import Task
from bert_tf.training.trainer import Trainer, TrainingSettings


def pretraining_sums(labels, outputs):
    """Per-batch sums from which every loss and metric of the original is computed (the
    next-sentence ones only when `outputs` has next-sentence logits)."""
    logits = tf.cast(outputs["masked_lm_logits"], tf.float32)
    ids = tf.cast(labels["masked_lm_ids"], tf.int32)
    weights = tf.cast(labels["masked_lm_weights"], tf.float32)
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), ids), tf.float32)
    sums = {
        "mlm_loss_sum": tf.reduce_sum(weights * masked_lm_xent(logits, ids)),
        "mlm_weight": tf.reduce_sum(weights),
        "mlm_correct": tf.reduce_sum(weights * correct),
    }
    if "next_sentence_logits" in outputs:
        nsp_logits = tf.cast(outputs["next_sentence_logits"], tf.float32)
        nsp_labels = tf.reshape(tf.cast(labels["next_sentence_labels"], tf.int32), [-1])
        nsp_correct = tf.cast(tf.equal(tf.argmax(nsp_logits, -1, output_type=tf.int32), nsp_labels), tf.float32)
        sums["nsp_loss_sum"] = tf.reduce_sum(next_sentence_xent(nsp_logits, nsp_labels))
        sums["nsp_correct"] = tf.reduce_sum(nsp_correct)
    sums["examples"] = tf.cast(tf.shape(ids)[0], tf.float32)
    return sums


def metrics_from_sums(sums):
    """The original's names and meanings (masked-LM metrics weighted by masked_lm_weights);
    next-sentence ones only when `sums` has them."""
    w, n = max(float(sums["mlm_weight"]), 1e-12), max(float(sums["examples"]), 1e-12)
    metrics = {
        "masked_lm_loss": float(sums["mlm_loss_sum"]) / w,
        "masked_lm_accuracy": float(sums["mlm_correct"]) / w,
    }
    if "nsp_loss_sum" in sums:
        metrics["next_sentence_loss"] = float(sums["nsp_loss_sum"]) / n
        metrics["next_sentence_accuracy"] = float(sums["nsp_correct"]) / n
    return metrics


class PretrainingTask(Task):
    """BertPretrainer on the original's pre-training TFRecords (`data`: files or patterns);
    `next_sentence_prediction=False` trains the masked LM alone on the same records."""

    def __init__(self, bert_config, max_seq_length=128, max_predictions_per_seq=20, next_sentence_prediction=True):
        bert_config.check_seq_length(max_seq_length)
        self.bert_config = bert_config
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self.next_sentence_prediction = next_sentence_prediction
        nsp = ("nsp_loss_sum", "nsp_correct") if next_sentence_prediction else ()
        self.sum_names = ("mlm_loss_sum", "mlm_weight", "mlm_correct", *nsp, "examples")

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)
        return BertPretrainer(encoder, next_sentence_prediction=self.next_sentence_prediction)

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        # Eval and predict read the files in order, dropping a last partial batch (fixed shapes).
        return pretraining_dataset(
            data,
            batch_size,
            self.max_seq_length,
            self.max_predictions_per_seq,
            is_training=mode == "train",
            input_context=input_context,
            seed=seed,
            skip_batches=skip_batches,
            # Every record's ids checked: on an accelerator a gather out of range does not fail.
            vocab_size=self.bert_config.vocab_size,
        )

    def normalizers(self, labels):
        return {
            "mlm_weight": tf.reduce_sum(tf.cast(labels["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(labels["masked_lm_ids"])[0], tf.float32),
        }

    def sums(self, labels, outputs):
        return pretraining_sums(labels, outputs)

    def loss(self, sums, normalizers):
        loss = sums["mlm_loss_sum"] / (normalizers["mlm_weight"] + MASKED_LM_DENOMINATOR_EPSILON)
        if self.next_sentence_prediction:
            loss = loss + sums["nsp_loss_sum"] / normalizers["examples"]
        return loss

    def train_logs(self, sums):
        logs = metrics_from_sums(sums)
        logs["loss"] = logs["masked_lm_loss"] + logs.get("next_sentence_loss", 0.0)
        return logs

    def eval_results(self, sums, gathered, batch_losses):
        results = metrics_from_sums(sums)
        # The original's `loss` is the mean over batches of each batch's total loss.
        results["loss"] = sum(batch_losses) / len(batch_losses)
        return results


@dataclasses.dataclass(frozen=True)
class PretrainingSettings(TrainingSettings):
    """run_pretraining.py's flags: the loop's settings plus the data's shape."""

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    max_eval_steps: int | None = 100
    next_sentence_prediction: bool = True


class Pretraining(Trainer):
    """The loop on `PretrainingTask(bert_config)`: its evaluation is the original's, over at most
    max_eval_steps batches with the files read in order."""

    def __init__(self, bert_config, settings: PretrainingSettings, strategy):
        task = PretrainingTask(
            bert_config, settings.max_seq_length, settings.max_predictions_per_seq, settings.next_sentence_prediction
        )
        super().__init__(task, settings, strategy)


def check_data_files(files, max_seq_length, max_predictions_per_seq, vocab_size):
    """Before training: the first record of each of `files` (each once) must be pre-training
    data of these lengths, with ids below `vocab_size` (the config's); a ValueError naming the
    file otherwise. The pipeline checks every record's lengths and ids again as it reads them."""
    for path in dict.fromkeys(files):
        tfrecords.check_pretraining_file(path, max_seq_length, max_predictions_per_seq, vocab_size)


def input_error_message(error, files):
    """One line for an error met while reading `files` (a truncated or corrupted file, a record
    the pipeline's checks reject), naming the file; None when `error` is not one of those."""
    if isinstance(error, tf.errors.DataLossError) or (
        isinstance(error, tf.errors.InvalidArgumentError) and "TFRecord" in error.message
    ):
        return tfrecords.read_error_message(error, files)
    return None


def _checkpoint_heads(path):
    """The pre-training heads ("masked_lm", "next_sentence") a TensorFlow checkpoint holds, ours
    (its object graph) or of the original layout (cls/predictions, cls/seq_relationship); None
    for anything else (a Hugging Face folder, a .keras file, no checkpoint: `restore` says more)."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    if os.path.isdir(path):
        path = tf.train.latest_checkpoint(path) or os.path.join(path, "bert_model.ckpt")
    try:
        reader = tf.train.load_checkpoint(path)
    except (tf.errors.OpError, ValueError):
        return None
    names = reader.get_variable_to_shape_map()
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in names:
        original = {"cls/predictions/": "masked_lm", "cls/seq_relationship/": "next_sentence"}
        return {head for prefix, head in original.items() if any(name.startswith(prefix) for name in names)}
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    model = [child.node_id for child in graph.nodes[0].children if child.local_name == "model"]
    children = {child.local_name for node in model for child in graph.nodes[node].children}
    return children & {"masked_lm", "next_sentence"}


def check_next_sentence_head(output_dir, init_checkpoint, next_sentence_prediction):
    """Before a pre-training run with next-sentence prediction: the checkpoint it starts from (the
    latest in `output_dir`, which wins, else `init_checkpoint`) must not be one pre-trained without
    (the masked-LM head but no next-sentence head): restored partially, the next-sentence head
    would start untrained in the middle of a schedule, or of a model said to be pre-trained."""
    latest = tf.train.latest_checkpoint(output_dir) if os.path.isdir(output_dir) else None
    source = latest or init_checkpoint
    if not next_sentence_prediction or not source:
        return
    heads = _checkpoint_heads(source)
    if heads is None or heads != {"masked_lm"}:
        return
    where = (f"the checkpoint {latest} in {shown.output_dir}={output_dir}" if latest
             else f"{shown.init_checkpoint}={init_checkpoint}")
    remedy = (f"resume with {shown.next_sentence_prediction}=False, or use another {shown.output_dir}" if latest
              else f"give {shown.next_sentence_prediction}=False (the masked LM alone)")
    raise ValueError(
        f"{shown.next_sentence_prediction}=True, but {where} was pre-trained without the next-sentence head "
        f"({shown.next_sentence_prediction}=False): that head would start untrained; {remedy}"
    )


def __getattr__(name):
    """Names this module re-exported before, as deprecated aliases (see `bert_tf._deprecated`)."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
