"""SWAG on the one fine-tuning driver (`bert_tf.tasks.contract`): run_swag.py's steps."""

from absl import logging

from bert_tf.data.batching import with_unlabelled
from bert_tf.tasks.contract import FineTuning, UsageError, reported
from bert_tf.tasks.swag import run
from bert_tf.tasks.swag.reader import encode_examples


class SwagFineTuning(FineTuning):
    kind = "swag"
    reads_transfer = True

    def check_given(self):
        if not self.settings.data_dir:
            raise UsageError("--data_dir (the SWAG CSV files) is required", "data_dir")

    def read_inputs(self, config):
        f = self.settings
        with reported(flag_names=("data_dir",)):
            self.train = run.read_split(f.data_dir, "train") if f.do_train else []
            self.dev = run.read_split(f.data_dir, "dev") if f.do_eval else []
            self.test = run.read_split(f.data_dir, "test") if f.do_predict else []
        self.read_transfer(run.read_transfer)

    def record(self, group_by_length):
        return run.swag_record(self.settings.do_lower_case, self.settings.max_seq_length, group_by_length)

    def fields_to_match(self, do_train):
        return run.fields_to_match(do_train)

    def build_task(self, config, record, length_bucket):
        self.task = run.build_task(config, record, self.settings.vocab_file, length_bucket)
        return self.task

    def encode(self, task):
        self.num_transfer = len(self.transfer)
        return len(self.train) + self.num_transfer

    def describe(self):
        return f"Task swag ({self.task.num_choices} choices)"

    def train_data(self):
        if not self.train:
            return None
        data = encode_examples(self.train)
        return with_unlabelled(data, encode_examples(self.transfer)) if self.transfer else data

    def evaluate(self, trainer):
        self.announce("evaluation", len(self.dev))
        return run.evaluate(trainer, self.dev)

    def predict(self, trainer):
        self.announce("prediction", len(self.test))
        written = run.predict(trainer, self.task, self.test)
        if written:  # the chief
            logging.info("Predictions: %s and %s", written.results_file, written.submission_file)
