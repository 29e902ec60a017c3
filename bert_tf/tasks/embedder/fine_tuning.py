"""Sentence embeddings on the one fine-tuning driver (`bert_tf.tasks.contract`):
run_sentence_embedding.py's steps.

--init_checkpoint may be a sentence-transformers folder: its modules say the pooling, the
normalization and the max length (`bert_tf.checkpoints.sentence_transformers`), which flags given
anyway must agree with; its BERT module is the Hugging Face folder the encoder starts from. So
does an embedding run of ours, given or in --output_dir (its record's pooling, normalization and
length). Any other start
(a Google checkpoint, a plain Hugging Face folder, a run of another task) takes the flags,
--pooling=mean by default."""

import dataclasses
import os

from absl import logging

from bert_tf.checkpoints import sentence_transformers as st
from bert_tf.fields import given
from bert_tf.runs import record as run_record
from bert_tf.tasks.contract import FineTuning, UsageError, reported
from bert_tf.tasks.embedder import run
from bert_tf.tasks.embedder.reader import ScoredPairs

DEFAULT_POOLING = "mean"


def modules_from_settings(settings):
    """`(settings, modules)`: with `init_checkpoint` a sentence-transformers folder, its Modules
    (None for any other source), checked against `pooling` and `normalize` where given, and the
    settings with the folder's values for those not given (and `init_checkpoint` its BERT module's
    folder). `max_seq_length`, given, is the run's whatever the folder's (a length up to the
    model's positions: the driver checks that); not given, that of the embedding run in
    `output_dir` (resumed or evaluated), else the folder's, and one beyond the model's positions
    is refused naming its file."""
    f = settings
    if not st.is_sentence_transformers_folder(f.init_checkpoint):
        return f, None
    folder = f.init_checkpoint
    with reported("--init_checkpoint: "):
        modules = st.read_modules(folder)
    given_values = {name: getattr(f, name) if given(f, name) else None for name in ("pooling", "normalize")}
    with reported("--"):
        st.check_agrees(modules, **given_values, source=folder)  # the flag, then the folder's value
    values = {"pooling": modules.pooling, "normalize": modules.normalize, "init_checkpoint": modules.transformer}
    resumed = run_record.read(f.output_dir) if f.output_dir and os.path.isdir(f.output_dir) else None
    if resumed is not None and resumed.kind == "embedder" and not given(f, "max_seq_length"):
        values["max_seq_length"] = resumed.max_seq_length  # the run in output_dir keeps the length it was given
    elif modules.max_seq_length is not None and not given(f, "max_seq_length"):
        try:
            st.check_length_fits(modules)
        except ValueError as e:
            raise UsageError(f"--init_checkpoint: {e}: give --max_seq_length of that many or less",
                             "init_checkpoint") from None
        values["max_seq_length"] = modules.max_seq_length
    return dataclasses.replace(f, **values), modules


def run_settings(settings):
    """`(settings, record)`: the record of the embedding run of ours that `init_checkpoint` names
    (its folder, ckpt-N or .keras file), or else that `output_dir` holds (None for any other
    source), and the settings with its pooling and normalization (given ones must agree) and its
    max_seq_length unless given."""
    f = settings
    source = f.init_checkpoint or (f.output_dir if os.path.isdir(f.output_dir or "") else None)
    if not source or st.is_sentence_transformers_folder(source):
        return f, None
    directory = run_record.run_directory(source)
    with reported("--init_checkpoint: "):
        found = run_record.read(directory)
    if found is None or found.kind != "embedder":
        return f, None
    recorded = found.settings_values()
    values = {}
    for name, value in ((name, recorded[name]) for name in ("pooling", "normalize")):  # the vectors' computation
        if given(f, name) and getattr(f, name) != value:
            raise UsageError(f"--{name}={getattr(f, name)} but the embedding run {directory} has {name}={value}", name)
        values[name] = value
    if not given(f, "max_seq_length"):  # another length may be given: the vectors are the same model's
        values["max_seq_length"] = recorded["max_seq_length"]
    return dataclasses.replace(f, **values), found


class EmbedderFineTuning(FineTuning):
    kind = "embedder"
    reads_transfer = True
    progress_fields = {"loss": "loss", "acc": "accuracy", "ex_per_s": "examples_per_second"}

    def check_given(self):
        if not self.settings.data_dir:
            raise UsageError("--data_dir (train.tsv, dev.tsv, test.tsv) is required", "data_dir")
        # Before the driver reads the config and casing of --init_checkpoint: a sentence-transformers
        # folder's BERT module is the Hugging Face folder they come from.
        self.settings, self.modules = modules_from_settings(self.settings)
        self.settings, self.started_from = run_settings(self.settings)

    def check(self, config):
        if self.settings.pooling is None:
            self.settings = dataclasses.replace(self.settings, pooling=DEFAULT_POOLING)
        f = self.settings
        if not f.similarity_scale > 0:
            raise UsageError(f"--similarity_scale={f.similarity_scale} must be positive", "similarity_scale")
        if f.do_train and f.train_batch_size < 2:
            raise UsageError(f"--train_batch_size={f.train_batch_size}: in-batch negatives need at least 2 pairs per "
                             "batch (each anchor's candidates are the batch's positives)", "train_batch_size")

    def read_inputs(self, config):
        f = self.settings
        with reported(flag_names=("data_dir",)):
            self.train = run.read_split(f.data_dir, "train", f.do_lower_case) if f.do_train else None
            self.dev = run.read_split(f.data_dir, "dev", f.do_lower_case) if f.do_eval else None
            self.test = run.read_split(f.data_dir, "test", f.do_lower_case) if f.do_predict else None
        self.read_transfer(run.read_transfer)
        if self.train is not None and len(self.train) < 2:
            raise UsageError(f"--data_dir={f.data_dir}: train.tsv has {len(self.train)} pair; in-batch negatives "
                             "need at least 2", "data_dir")
        if self.train is not None and f.train_batch_size > len(self.train):
            raise UsageError(f"--train_batch_size={f.train_batch_size} is more than the {len(self.train)} pairs of "
                             f"{f.data_dir}/train.tsv: a batch would hold a pair twice, its own positive among its "
                             "negatives", "train_batch_size")

    def record(self, group_by_length):
        if group_by_length:
            raise UsageError("--group_by_length is not offered for sentence embeddings: a batch's rows are each "
                             "other's negatives, and grouping by length would make them alike", "group_by_length")
        f = self.settings
        return run.embedder_record(f.pooling, f.normalize, f.similarity_scale, f.do_lower_case, f.max_seq_length,
                                   f.max_windows, f.window_stride() if f.max_windows > 1 else None)

    def fields_to_match(self, do_train):
        return run.fields_to_match(do_train)

    def teacher_fields(self):
        return ("kind",)  # the vectors are compared: the teacher may pool and normalize as it was trained to

    def check_teacher(self, config, teacher):
        if config.hidden_size != teacher.config.hidden_size:
            raise UsageError(f"--teacher={teacher.path} gives vectors of {teacher.config.hidden_size} dimensions, the "
                             f"student {config.hidden_size}: the vectors' squared distance needs one width", "teacher")
        if teacher.layers is not None:  # cut from the teacher: its pooling and normalization too, unless given
            recorded = teacher.record.settings_values()
            self.settings = dataclasses.replace(self.settings, **{
                name: recorded[name] for name in ("pooling", "normalize") if not given(self.settings, name)})

    def build_task(self, config, record, length_bucket):
        self.task = run.build_task(config, record, self.settings.vocab_file, length_bucket)
        return self.task

    def encode(self, task):
        for name, data in (("train", self.train), ("dev", self.dev), ("test", self.test)):
            if data is not None:
                self.log_windows(name, task.window_counts(run.features(data)))
        if self.transfer:
            self.log_windows("transfer", task.window_counts(run.features(self.transfer)))
        self.num_transfer = len(self.transfer)
        return (len(self.train) if self.train is not None else 0) + self.num_transfer

    def describe(self):
        t = self.task
        return (f"Task embedder ({t.pooling} pooling{', normalized' if t.normalize else ''}, "
                f"similarity scale {t.similarity_scale:g})")

    def training_examples(self):
        negatives = self.train is not None and self.train.negative is not None
        pairs = f"{self.num_train_examples - self.num_transfer} pairs{' with hard negatives' if negatives else ''}"
        if not self.num_transfer:
            return pairs
        return f"{pairs} and {self.num_transfer} texts of --transfer_file ({self.num_train_examples} rows)"

    def train_data(self):
        if self.train is None:
            return None
        data = run.features(self.train)
        return run.with_transfer(data, self.transfer) if self.transfer else data

    def evaluate(self, trainer):
        unit = "scored pairs" if isinstance(self.dev, ScoredPairs) else "pairs"
        self.announce("evaluation", len(self.dev), unit)
        return run.evaluate(trainer, self.dev)

    def predict(self, trainer):
        self.announce("prediction", len(self.test), "texts")
        written = run.predict(trainer, self.test)
        if written:  # the chief
            logging.info("Embeddings: %s (texts in %s)", written.embeddings_file, written.texts_file)

