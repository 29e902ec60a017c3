"""Sentence (pair) classification on the one fine-tuning driver (`bert_tf.tasks.contract`):
run_classifier.py's steps."""

import dataclasses

from absl import logging

from bert_tf.data.batching import with_unlabelled
from bert_tf.tasks.classifier import run
from bert_tf.tasks.classifier.inputs import encode_examples
from bert_tf.tasks.contract import FineTuning, UsageError, reported


class ClassifierFineTuning(FineTuning):
    kind = "classifier"
    reads_transfer = True

    def check(self, config):  # after the common checks, as the original script's order was
        if not self.settings.data_dir and not self.settings.tfds_name:
            raise UsageError("--data_dir (the task's files) or --tfds_name (tensorflow-datasets) is required",
                             "data_dir")

    @staticmethod
    def shared_settings(values):
        if values.get("task_name"):
            values["task_name"] = values["task_name"].strip().lower()  # as the catalog keys it
        return values

    def read_inputs(self, config):
        f = self.settings
        if f.task_module:
            with reported("--task_module="):
                run.import_task_module(f.task_module)
        with reported("--", setting="task_name"):
            self.processor = run.create_processor(
                f.task_name, f.tfds_name, lambda option: f"{option} (--{option})",  # the flag of that name
                xnli_language=f.xnli_language, labels_file=f.labels_file,
            )
        splits = [split for split, wanted in (("train", f.do_train), ("dev", f.do_eval), ("test", f.do_predict))
                  if wanted]
        with reported(setting="tfds_name" if f.tfds_name else "data_dir"):
            self.inputs = run.read_inputs(self.processor, splits, f.data_dir, f.tfds_name, f.tfds_data_dir,
                                          f.tfds_download)
        self.read_transfer(lambda path: run.read_transfer(self.processor, path))

    def record(self, group_by_length):
        f = self.settings
        self.run_record = run.classifier_record(self.processor, self.inputs.pair, f.do_lower_case, f.max_seq_length,
                                                group_by_length, max_windows=f.max_windows,
                                                doc_stride=f.window_stride() if f.max_windows > 1 else None,
                                                window_pooling=f.window_pooling)
        return self.run_record

    def fields_to_match(self, do_train):
        return run.fields_to_match(do_train)

    def build_task(self, config, record, length_bucket):
        return run.build_task(config, self.processor, record, self.settings.vocab_file, length_bucket)

    def encode(self, task):
        self.features = run.encode_inputs(self.inputs)
        if self.transfer:
            transfer = encode_examples(self.transfer, self.processor.get_labels(), self.processor.label_kind,
                                       "transfer")
            self.features = dataclasses.replace(self.features, train=with_unlabelled(self.features.train, transfer))
        sets = {"train": self.features.train, **{f"dev {k}".strip(): v for k, v in self.features.dev.items()},
                **{f"test {k}".strip(): v for k, v in self.features.test.items()}}
        for name, data in sets.items():
            if data is not None:
                self.log_windows(name, task.window_counts(data))
        self.num_transfer = len(self.transfer)
        return len(self.inputs.train or ()) + self.num_transfer

    def describe(self):
        record = self.run_record
        return f"Task {record.task_name} ({record.label_kind}, {len(record.labels)} labels)"

    def train_data(self):
        return self.features.train

    def evaluate(self, trainer):
        return run.evaluate(trainer, self.inputs, self.features,
                            lambda name, count: self.announce("evaluation", count, name=name))

    def predict(self, trainer):
        announce = lambda name, count: self.announce("prediction", count, name=name)  # noqa: E731
        for results_file, submission in run.predict(trainer, self.inputs, self.features, announce):
            logging.info("Predictions: %s and %s", results_file, submission)
