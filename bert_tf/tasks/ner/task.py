"""Token classification (paper §5.3, CoNLL-2003 NER) as a task of the one loop.

Each word's tag is predicted from its first sub-token (`bert_tf.tasks.ner.inputs`): the labels are
`[batch, seq]` tag ids with weight 1 on first sub-tokens and 0 elsewhere, so the classification
task's loss and metrics apply as they are, per word instead of per example: the mean
cross-entropy over the global batch's words, and word accuracy. Evaluation adds conlleval's
entity-level precision, recall and F1 (overall and per type).

Fine-tuned, the model is a BertTokenClassifier; feature-based (paper §5.3, Table 7), a
BertFeatureTagger over the frozen encoder, with the same inputs, loss and figures. Batches cut to
their longest window (`length_bucket`) cut the labels and weights with the inputs; predicted and
gold tags are padded back to max_seq_length, so that batches gather as with fixed padding.
"""

import os

import numpy as np
import tensorflow as tf

from bert_tf.data.batching import array_dataset, carried, pad_positions
from bert_tf.data.lengths import cut_padding
from bert_tf.errors import shown
from bert_tf.models import BertEncoder, BertFeatureTagger, BertTokenClassifier
from bert_tf.models.bert_feature_tagger import LSTM_UNITS, feature_layer_indices
from bert_tf.tasks.classifier.task import ClassifierTask
from bert_tf.tasks.ner import conlleval
from bert_tf.tasks.ner.inputs import encode_sentences, tags_of
from bert_tf.training.distillation import soft_target_kl


class NerTask(ClassifierTask):
    """A BertTokenClassifier over the tags `labels` or, with `feature_based` (one of
    `bert_feature_tagger.FEATURE_LAYERS`), a BertFeatureTagger reading those layers of the
    frozen encoder with a BiLSTM `lstm_units` wide per direction.

    vocab_file / do_lower_case / max_seq_length configure the word pieces; context_words: how
    many preceding words each window after a sentence's first repeats as context (`windows`).
    `data` for `dataset` is `encode`'s dict.
    """

    def __init__(self, bert_config, labels, vocab_file=None, do_lower_case=True, max_seq_length=128,
                 context_words=0, dropout_rate=0.1, feature_based=None, lstm_units=LSTM_UNITS,
                 length_bucket=None, group_by_length=False):
        super().__init__(bert_config, labels, "single", vocab_file, do_lower_case, max_seq_length,
                         pair=False, dropout_rate=dropout_rate, length_bucket=length_bucket,
                         group_by_length=group_by_length)
        bad = [t for t in self.labels if not conlleval.is_valid_tag(t)]
        if bad:
            raise ValueError(f"labels {bad} are not O or B-/I-/E-/S- followed by a type")
        if context_words < 0:
            raise ValueError(f"context_words must not be negative, got {context_words}")
        if feature_based is not None:  # the model's own checks, before any input is read
            feature_layer_indices(feature_based, bert_config.num_hidden_layers)
            if lstm_units < 1:
                raise ValueError(f"{shown.lstm_units}={lstm_units} must be at least 1")
        self.context_words = context_words
        self.feature_based = feature_based
        self.lstm_units = lstm_units

    def encode(self, sentences):
        """`bert_tf.tasks.ner.conll.Sentence`s -> the window arrays `dataset` reads."""
        if self.pack is None:
            raise ValueError(f"NerTask needs a {shown.vocab_file} to read text")
        return encode_sentences(sentences, self.labels, self.pack.tokenizer, self.max_seq_length, self.context_words)

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)
        if self.feature_based is not None:
            return BertFeatureTagger(
                encoder, len(self.labels), self.feature_based, self.lstm_units, dropout_rate=self.dropout_rate
            )
        return BertTokenClassifier(encoder, num_classes=len(self.labels), dropout_rate=self.dropout_rate)

    def restore(self, model, path):
        """As every task's, but a BertFeatureTagger takes from Google's layout (which has no
        place for a BiLSTM) its encoder alone, reported with its head as not found."""
        from bert_tf import checkpoints

        if not isinstance(model, BertFeatureTagger) or _is_ours(path):
            return super().restore(model, path)
        report = checkpoints.restore(model.encoder, path) or checkpoints.LoadReport([], [], [])
        return checkpoints.LoadReport(
            report.loaded, report.unused, report.ignored, [*report.not_found, f"the {type(model).__name__} head"]
        )

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        per_position = ("input_word_ids", "input_mask", "input_type_ids", "label_ids", "label_weights")

        def to_model(batch):
            batch = cut_padding(batch, self.length_bucket, per_position)
            x = {k: batch[k] for k in per_position[:3]}
            # Padding rows' label weights are 0 already.
            return x, {"label": batch["label_ids"], "weight": batch["label_weights"], "sentence": batch["sentence"],
                       **carried(batch)}

        lengths = data["input_mask"].sum(axis=1) if mode == "train" and self.group_by_length else None
        ds = array_dataset(data, mode, batch_size, input_context, seed, skip_batches, lengths)
        return ds.map(to_model, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)

    def distillation_losses(self, inputs, labels, student, teacher, temperature):
        # Every real token's tag distribution (a transfer sentence has no first sub-tokens marked),
        # the mean over the sentence's window.
        per_token = soft_target_kl(student, teacher, temperature)  # [B, S]
        mask = tf.cast(inputs["input_mask"], tf.float32)
        return tf.reduce_sum(per_token * mask, axis=-1) / tf.maximum(tf.reduce_sum(mask, axis=-1), 1.0)

    def teacher_targets(self, outputs, rows):
        return {"outputs": pad_positions(tf.cast(outputs, tf.float32), self.max_seq_length)}  # [rows, S, tags]

    def teacher_outputs(self, targets, student):
        return targets["outputs"][:, : tf.shape(student)[1]]  # the batch's positions (masked past its tokens)

    def predict_outputs(self, outputs):
        predicted = tf.argmax(outputs, axis=-1, output_type=tf.int32)  # [batch, seq]
        return {"predicted": pad_positions(predicted, self.max_seq_length)}  # [batch, max_seq_length]

    def eval_outputs(self, labels, outputs):
        # Padded positions have weight 0: they tag nothing, as fixed padding's.
        return {**self.predict_outputs(outputs), "label": pad_positions(labels["label"], self.max_seq_length),
                "weight": pad_positions(labels["weight"], self.max_seq_length), "sentence": labels["sentence"]}

    def eval_results(self, sums, gathered, batch_losses):
        weights = gathered["weight"]
        # Words per sentence (padding rows tag nothing; windows of a sentence are consecutive).
        lengths = np.bincount(gathered["sentence"], weights=(weights > 0).sum(axis=1)).astype(int)
        gold = self.tag_names(tags_of(gathered["label"], weights, lengths))
        predicted = self.tag_names(tags_of(gathered["predicted"], weights, lengths))
        n = max(sums["examples"], 1e-12)
        results = {"eval_loss": sums["loss_sum"] / n, "loss": float(np.mean(batch_losses))}
        results.update(conlleval.evaluate(gold, predicted).as_dict("eval_"))
        return results

    def tag_names(self, sentences):
        """Lists of tag ids -> lists of tag names."""
        return [[self.labels[i] for i in ids] for ids in sentences]


def _is_ours(path):
    """Whether `path` (an init_checkpoint) is a .keras file or one of the loop's checkpoints (a
    run's folder or its ckpt-N), which hold whole models, not Google's name-based layout."""
    from bert_tf.checkpoints.restore import is_training_checkpoint

    if path.endswith(".keras"):
        return True
    checkpoint = tf.train.latest_checkpoint(path) if os.path.isdir(path) else path
    return bool(checkpoint) and is_training_checkpoint(checkpoint)
