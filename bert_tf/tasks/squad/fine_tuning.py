"""SQuAD on the one fine-tuning driver (`bert_tf.tasks.contract`): run_squad.py's steps, with the
original's checks (validate_flags_or_throw) and words. A run evaluates by predicting: the official
figures of a dev set's answers."""

import json
import os

from absl import logging

from bert_tf.errors import shown
from bert_tf.tasks.contract import FineTuning, UsageError, reported
from bert_tf.tasks.squad import run


class SquadFineTuning(FineTuning):
    kind = "squad"
    actions = ("do_train", "do_predict")
    evaluation = "do_predict"  # a search's runs are chosen by their predictions' figures
    progress_fields = {"loss": "loss", "start_acc": "start_accuracy", "ex_per_s": "examples_per_second"}
    # Its loss's softmax runs over the padding positions too (the original's): skipping changes their logits.
    loss_reads_padding = run.SquadTask.loss_reads_padding
    reads_transfer = True  # a prediction file's questions, read as its features (`encode`)

    def check_given(self):
        f = self.settings  # a missing input is named before a missing model
        if f.do_train and not (f.train_file or f.tfds_name):
            raise UsageError("If `do_train` is True, then `train_file` (or --tfds_name) must be specified.",
                             "train_file")
        if f.do_predict and not (f.predict_file or f.tfds_name):
            raise UsageError("If `do_predict` is True, then `predict_file` (or --tfds_name) must be specified.",
                             "predict_file")

    def check(self, config):
        f = self.settings
        if f.max_seq_length <= f.max_query_length + 3:
            raise UsageError(f"The {shown.max_seq_length} ({f.max_seq_length}) must be greater than "
                             f"{shown.max_query_length} "
                             f"({f.max_query_length}) + 3", "max_seq_length")
        for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
            if getattr(f, name) < 1:
                raise UsageError(f"--{name}={getattr(f, name)} must be a positive integer", name)
        if f.doc_stride > (passage := f.max_seq_length - f.max_query_length - 3):
            logging.warning("--doc_stride=%d is longer than a window's passage (max_seq_length - query - 3 = at least "
                            "%d tokens): parts of long contexts fall in no window and their answers cannot be found",
                            f.doc_stride, passage)
        for name in ("train_file", "predict_file"):
            path = getattr(f, name)
            if path and not f.tfds_name and not os.path.isfile(path):
                why = "is a directory, not a file" if os.path.isdir(path) else "no such file"
                raise UsageError(f"--{name}={path}: {why}", name)

    def read_inputs(self, config):
        """The vocabulary, against the config; the questions are read as features (`encode`) once
        --output_dir (their cache) is checked."""
        from bert_tf.checkpoints import sources

        f = self.settings
        with reported("--"):
            self.tokenizer = run.load_tokenizer(f.vocab_file, f.do_lower_case)
        with reported(f"--vocab_file vs --{sources.config_setting(f.bert_config_file, f.init_checkpoint)}: "):
            config.check_vocab_size(len(self.tokenizer.vocab), f.vocab_file)
        self.read_transfer(lambda path: path)  # there, a file: its questions are read with the others

    def record(self, group_by_length):
        f = self.settings
        self.run_record = run.squad_record(f.version_2_with_negative, f.do_lower_case, f.max_seq_length,
                                           f.doc_stride, f.max_query_length, group_by_length)
        return self.run_record

    def fields_to_match(self, do_train):
        return run.fields_to_match(do_train)

    def build_task(self, config, record, length_bucket):
        return run.build_task(config, record, length_bucket)

    def encode(self, task):
        f = self.settings
        files = run.InputFiles(f.train_file, f.predict_file, f.tfds_name, f.tfds_data_dir, f.tfds_download,
                               self.transfer or None)
        with reported("--"):
            self.inputs = run.read_inputs(  # every input read before any training
                files, f.do_train, f.do_predict, self.tokenizer, f.vocab_file, self.run_record, f.output_dir,
                on_features=lambda cached: logging.info("%s", cached.summary()))
        self.num_transfer = self.inputs.transfer.examples if self.inputs.transfer else 0
        return self.inputs.train.examples + self.num_transfer if self.inputs.train else 0

    def describe(self):
        return f"SQuAD {'v2.0' if self.settings.version_2_with_negative else 'v1.1'}"

    def training_examples(self):
        records = self.inputs.train.records
        if not records.transfer:
            return f"{self.num_train_examples} examples, {records.count} features"
        return (f"{self.num_train_examples} examples ({self.num_train_examples - self.num_transfer} labelled, "
                f"{self.num_transfer} of --transfer_file), {records.total} features ({records.transfer.count} of "
                "--transfer_file)")

    def train_data(self):
        return self.inputs.train.records if self.inputs.train else None

    def predict(self, trainer):
        f, inputs = self.settings, self.inputs
        logging.info("***** Running predictions: %d features *****", inputs.predict.records.count)
        answers = run.AnswerSettings(f.n_best_size, f.max_answer_length, f.null_score_diff_threshold)
        with reported("--predict_file="):  # every error starts with a file
            done = run.predict_and_evaluate(trainer, inputs, self.tokenizer, self.run_record, answers)
        if done is None:  # not the chief: it writes nothing
            return
        written, results = done
        logging.info("Wrote %d predictions to %s", len(written.predictions),
                     os.path.join(f.output_dir, run.PREDICTIONS_FILE))
        if results is None:
            logging.info("%s carries no answers: no evaluation", inputs.predict_file)
        else:
            logging.info("***** Eval results *****\n%s", json.dumps(results, indent=2))
        return results
