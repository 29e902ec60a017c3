"""Named-entity recognition on the one fine-tuning driver (`bert_tf.tasks.contract`): run_ner.py's
steps. The tag set comes from --labels, the run being resumed or initialised from, the TFDS
dataset, or else the training data."""

from absl import logging

from bert_tf.tasks.contract import FineTuning, UsageError, reported
from bert_tf.tasks.ner import run


class NerFineTuning(FineTuning):
    kind = "ner"
    reads_transfer = True

    def check_given(self):
        if not self.settings.data_dir and not self.settings.tfds_name:
            raise UsageError("--data_dir (the CoNLL files) or --tfds_name (tensorflow-datasets) is required",
                             "data_dir")

    @staticmethod
    def shared_settings(values):
        if values.get("feature_based") is None:
            values.pop("lstm_units", None)  # a fine-tuned model has no BiLSTM
        return values

    def check(self, config):
        from bert_tf.models.bert_feature_tagger import feature_layer_indices

        f = self.settings
        if f.window_context_words < 0:
            raise UsageError(f"--window_context_words={f.window_context_words} must not be negative",
                             "window_context_words")
        if f.lstm_units < 1:
            raise UsageError(f"--lstm_units={f.lstm_units} must be at least 1", "lstm_units")
        if f.feature_based:
            with reported("--"):
                feature_layer_indices(f.feature_based, config.num_hidden_layers)
            if f.lora_rank:  # the encoder is frozen and gets no gradient: adapters on it would never train
                raise UsageError(f"--lora_rank={f.lora_rank} with --feature_based={f.feature_based}: the encoder "
                                 "is frozen", "lora_rank")

    def _read(self, split, labels):
        f = self.settings
        with reported(flag_names=("data_dir",)):
            return run.read_split(split, labels, f.data_dir, f.tfds_name, f.tfds_data_dir, f.tfds_download)

    def read_inputs(self, config):
        f = self.settings
        # With --labels, only that file is read: an error is its.
        with reported("--labels: " if f.labels else ""):
            tags = run.given_tags(f.labels, f.output_dir, f.init_checkpoint, f.tfds_name, f.tfds_data_dir)
        self.train = self._read("train", tags.labels if tags else None) if f.do_train else []
        if tags is None:
            if not self.train:
                raise UsageError("no tag set: pass --labels (a file of the tags, one per line), or the --output_dir "
                                 "of a trained run", "labels")
            tags = run.training_tags(self.train)
        logging.info("Tags (%s): %s", f"--labels={f.labels}" if f.labels else tags.source, " ".join(tags.labels))
        self.tags = tags
        self.dev = self._read("dev", tags.labels) if f.do_eval else []
        self.test = self._read("test", tags.labels) if f.do_predict else []
        self.read_transfer(run.read_transfer)

    def record(self, group_by_length):
        f = self.settings
        return run.ner_record(self.tags.labels, f.do_lower_case, f.max_seq_length, f.window_context_words,
                              f.feature_based, f.lstm_units, group_by_length)

    def fields_to_match(self, do_train):
        return run.fields_to_match(do_train)

    def check_run(self, record):
        f = self.settings
        with reported(flag_names=("feature_based", "lstm_units")):
            run.check_model_settings(record, f.output_dir, f.do_train, f.init_checkpoint)

    def build_task(self, config, record, length_bucket):
        self.task = run.build_task(config, record, self.settings.vocab_file, length_bucket)
        return self.task

    def encode(self, task):
        self.features = run.encode_splits(task, {"train": self.train, "dev": self.dev, "test": self.test})
        if self.train and self.transfer:
            transfer = run.encode_splits(task, {"transfer": self.transfer})["transfer"]
            self.num_transfer = len(transfer["sentence"])
            self.features["train"] = run.with_transfer(self.features["train"], transfer)
        # Steps count windows, the examples the model sees (as many as sentences, but for long ones).
        return len(self.features["train"]["sentence"]) if self.train else 0

    def describe(self):
        return f"Task ner ({len(self.tags.labels)} tags)"

    def training_examples(self):
        transfer = f" and {len(self.transfer)} of --transfer_file" if self.num_transfer else ""
        return f"{len(self.train)} sentences{transfer} ({self.num_train_examples} windows)"

    def train_data(self):
        return self.features.get("train")

    def evaluate(self, trainer):
        self.announce("evaluation", len(self.dev), "sentences")
        return run.evaluate(trainer, self.features["dev"])

    def predict(self, trainer):
        self.announce("prediction", len(self.test), "sentences")
        written = run.predict(trainer, self.task, self.test, self.features["test"])
        if written:  # the chief
            logging.info("Predictions: %s", written.predictions_file)
            if written.report:
                logging.info("***** Test set (conlleval) *****\n%s", written.report.table())
