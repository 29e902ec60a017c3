"""The shape of a fine-tuning task kind's entry (`TaskKind`), apart from the registry that collects
them (`bert_tf.runs.registry`): a task folder's `kind` module declares its entry with it, and the
registry imports those modules, so the entry's shape must load without the registry."""

import dataclasses
import functools
import importlib
from collections.abc import Mapping

__all__ = ["FROM_SETTINGS", "TaskKind"]


class _FromSettings:
    """The default of a record field that is a setting of its kind (`TaskKind.record_fields`)."""

    def __repr__(self):
        return "FROM_SETTINGS"


# A record field's default that says: the field is the kind's setting of the same name. Its default
# is the setting's, a run's record takes it from the run's settings and gives it back to them.
FROM_SETTINGS = _FromSettings()


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """One fine-tuning task kind's entry in the registry (`bert_tf.runs.registry`).

    A task's folder declares it (`KIND` in its `kind.py`), or a package registers it. Its Task,
    exporter, FineTuning, settings and folder reader are named as "module:Name" strings and
    imported when asked for.

    Args:
        name: The kind's one name: its folder, its `--export_type`, its run record's `kind`.
        script: The run_scripts/ script that fine-tunes it.
        model_class: The Keras model (encoder + head).
        head_layer: The model's attribute holding the head (its `.dense` is the output layer); ""
            for a model without weights beyond its encoder's (the sentence embedder's pooling).
        head_names: The original layout's names of the head's kernel and bias (the kernel stored
            [outputs, hidden]); () without a head.
        record_fields: The run-record fields the kind keeps beyond those every run keeps, in
            order: name -> default, where FROM_SETTINGS makes the field the kind's setting of that
            name (see `record_defaults`); names alone default to None.
        task: "module:Class" of its Task.
        exporter: "module:function" of its export: f(model, record, **options).
        fine_tuning: "module:Class" of its `bert_tf.tasks.contract.FineTuning`: what the one
            driver runs.
        settings: "module:Class" of its settings (a `bert_tf.tasks.settings.FineTuningSettings`).
        from_original: Whether the original release fine-tunes the kind (run_classifier.py,
            run_squad.py): its checkpoints then convert to the kind's model
            (`bert_tf.checkpoints.convert`), found by the first of `head_names`.
        folder_record: "module:function" that reads another program's folder as a run of the
            kind (f(folder, casing, bert_config) -> RunRecord or None; see `read_folder`); "":
            none is.
        folder_files: "module:function" giving the files another program needs beside a
            Hugging Face folder's weights to read the kind's model (f(model, record, bert_config)
            -> {relative path: JSON value, or None for a folder}: the sentence embedder's
            sentence-transformers modules); "": none.
        model_args: record -> the model's constructor arguments.
        legacy_names: What earlier run records called the kind (their "model" field).
        unnamed_records: Whether a record that names no kind at all (no "kind", no "model": the
            first release's) is of this kind.
        label_kinds: The record's label_kind values (the first is the default), if it keeps labels.
        hf_architecture: transformers' class of the same model (config.json's `architectures`).
        hf_head: The name of that class's head module (`classifier.weight`, ...).
        hf_pooler: Whether that class has BERT's pooler: transformers leaves it out of the classes
            whose head reads every token.
        model_variant: record -> the model class where a record may ask for another than
            `model_class` (NER's feature-based tagger); None: `model_class`.
        dev_metrics: The dev figures (eval_results.txt keys, higher is better) a search chooses
            its best run by, the first found, where none of `bert_tf.training.search.METRICS` is
            there.
    """

    name: str
    script: str
    model_class: type
    head_layer: str
    head_names: tuple
    record_fields: Mapping | tuple
    task: str
    exporter: str
    fine_tuning: str = ""
    settings: str = ""
    from_original: bool = False
    folder_record: str = ""
    folder_files: str = ""
    model_args: callable = lambda record: {}
    legacy_names: tuple = ()
    unnamed_records: bool = False
    label_kinds: tuple = ()
    hf_architecture: str = ""
    hf_head: str = ""
    hf_pooler: bool = True
    model_variant: callable = lambda record: None
    dev_metrics: tuple = ()

    @functools.cached_property
    def record_defaults(self):
        """The kind's own record fields and their defaults.

        Returns:
            name -> default of each of `record_fields`, in their order; a FROM_SETTINGS field's
            default is its setting's in the kind's settings class.
        """
        fields = self.record_fields
        fields = dict(fields) if isinstance(fields, Mapping) else dict.fromkeys(fields)
        if any(value is FROM_SETTINGS for value in fields.values()):
            defaults = {f.name: f.default for f in dataclasses.fields(self.settings_class())}
            fields = {name: defaults[name] if value is FROM_SETTINGS else value for name, value in fields.items()}
        return fields

    @property
    def settings_fields(self):
        """The names of the record fields that are the kind's settings (marked FROM_SETTINGS)."""
        fields = self.record_fields
        return tuple(name for name, value in fields.items() if value is FROM_SETTINGS) if isinstance(
            fields, Mapping) else ()

    def task_class(self):
        """Returns the kind's Task class, imported."""
        return _load(self.task)

    def fine_tuning_class(self):
        """Returns the kind's FineTuning class, imported."""
        return _load(self.fine_tuning)

    def settings_class(self):
        """Returns the kind's settings class, imported."""
        return _load(self.settings)

    def read_folder(self, folder, casing, bert_config):
        """The record of a run of this kind that another program's folder stands for.

        Args:
            folder: A model folder (a Hugging Face folder, or part of one).
            casing: A callable returning the folder's do_lower_case, called only when needed.
            bert_config: The folder's BertConfig.

        Returns:
            A RunRecord, or None when the kind reads no folder (`folder_record` is "") or not
            this one.
        """
        return _load(self.folder_record)(folder, casing, bert_config) if self.folder_record else None

    def files_beside(self, model, record, bert_config):
        """The files another program needs beside a Hugging Face folder's weights.

        Args:
            model: The kind's model.
            record: Its run's RunRecord, or None.
            bert_config: Its BertConfig.

        Returns:
            {relative path: JSON value, or None for a folder without a file}; {} when the kind
            names none (`folder_files`).
        """
        return _load(self.folder_files)(model, record, bert_config) if self.folder_files else {}

    def export_options(self):
        """The names of the options the kind's exporter takes beyond every exporter's (e.g. SQuAD's
        `max_query_length`; a windowed run's `doc_stride`).

        Returns:
            A frozenset of argument names.
        """
        import inspect

        common = {"model", "record", "vocab_file", "seq_length", "export_dir", "overwrite", "serving"}
        return frozenset(inspect.signature(_load(self.exporter)).parameters) - common

    def export(self, model, record, **options):
        """Writes a fine-tuned model as a SavedModel, with the kind's exporter.

        Args:
            model: The fine-tuned model.
            record: Its run's RunRecord.
            **options: The exporter's own arguments (vocab_file, seq_length, export_dir, ...).

        Returns:
            What the exporter returns.
        """
        return _load(self.exporter)(model, record, **options)

    def model_class_for(self, record):
        """The model class of a run.

        Args:
            record: The run's RunRecord.

        Returns:
            `model_class`, or the kind's variant that the record asks for (`model_variant`).
        """
        return self.model_variant(record) or self.model_class

    def build_model(self, record, encoder):
        """The fine-tuned model a run record describes.

        Args:
            record: The run's RunRecord: it sizes the head (`model_args`).
            encoder: The BertEncoder the model is built on.

        Returns:
            The model, its weights to be restored by the caller.
        """
        return self.model_class_for(record)(encoder, **self.model_args(record))


def _load(reference):
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
