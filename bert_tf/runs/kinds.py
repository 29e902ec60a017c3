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
    """One fine-tuning task kind's entry: its name, script, model, head, record fields, and its
    Task, exporter, FineTuning and settings named as "module:Name" (imported when asked for)."""

    name: str  # the one name of the kind (see the module docstring)
    script: str  # the run_scripts/ script that fine-tunes it
    model_class: type  # the Keras model (encoder + head)
    # The model's attribute holding the head (its `.dense` is the output layer); "" for a model
    # without weights beyond its encoder's (the sentence embedder's pooling).
    head_layer: str
    # The original layout's names of the head's kernel and bias (the kernel stored [outputs, hidden]);
    # () without a head.
    head_names: tuple
    # The run-record fields this kind keeps beyond those every run keeps, in the order the kind
    # lists them: name -> default, where FROM_SETTINGS makes the field the kind's setting of that
    # name (see `record_defaults`); names alone default to None.
    record_fields: Mapping | tuple
    task: str  # "module:Class" of its Task, imported on demand
    exporter: str  # "module:function" of its export, imported on demand: f(model, record, **options)
    # "module:Class" of its `bert_tf.tasks.contract.FineTuning`: what the one driver runs
    fine_tuning: str = ""
    # "module:Class" of its settings (a `bert_tf.tasks.settings.FineTuningSettings`): what a run takes
    settings: str = ""
    # Whether the original release fine-tunes this kind (run_classifier.py, run_squad.py): its
    # checkpoints then convert to the kind's model (`bert_tf.checkpoints.convert`), found by the
    # first of `head_names`.
    from_original: bool = False
    # "module:function" that reads another program's folder as a run of this kind (f(folder, casing,
    # bert_config) -> RunRecord or None; see `folder_record`); "": none is.
    folder_record: str = ""
    model_args: callable = lambda record: {}  # the model's constructor arguments from a run record
    legacy_names: tuple = ()  # what earlier run records called the kind (their "model" field)
    label_kinds: tuple = ()  # the record's label_kind values (the first is the default), if it keeps labels
    # transformers' class of the same model (config.json's `architectures`), the name of its head
    # module (`classifier.weight`, ...) and whether it has BERT's pooler: transformers leaves it out
    # of the classes whose head reads every token.
    hf_architecture: str = ""
    hf_head: str = ""
    hf_pooler: bool = True
    # record -> the model class, where a record may ask for another than model_class (ner's
    # feature-based tagger); None: model_class
    model_variant: callable = lambda record: None
    # The dev figures (eval_results.txt keys, higher is better) a search chooses its best run by,
    # the first found, where none of `bert_tf.training.search.METRICS` is there.
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
        return _load(self.task)

    def fine_tuning_class(self):
        return _load(self.fine_tuning)

    def settings_class(self):
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

    def export(self, model, record, **options):
        """Writes `model` (fine-tuned as `record` says) as a SavedModel; see the kind's exporter."""
        return _load(self.exporter)(model, record, **options)

    def model_class_for(self, record):
        """The model class of the run `record` describes: `model_class`, or its kind's variant."""
        return self.model_variant(record) or self.model_class

    def build_model(self, record, encoder):
        """The fine-tuned model a run record describes, on `encoder` (weights to be restored by
        the caller)."""
        return self.model_class_for(record)(encoder, **self.model_args(record))


def _load(reference):
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
