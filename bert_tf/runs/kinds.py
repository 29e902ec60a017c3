"""The shape of a fine-tuning task kind's entry (`TaskKind`), apart from the registry that collects
them (`bert_tf.runs.registry`): a task folder's `kind` module declares its entry with it, and the
registry imports those modules, so the entry's shape must load without the registry."""

import dataclasses
import importlib

__all__ = ["TaskKind"]


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
    record_fields: tuple  # the run-record fields this kind keeps, beyond those every run keeps
    task: str  # "module:Class" of its Task, imported on demand
    exporter: str  # "module:function" of its export, imported on demand: f(model, record, **options)
    # "module:Class" of its `bert_tf.tasks.contract.FineTuning`: what the one driver runs
    fine_tuning: str = ""
    # "module:Class" of its settings (a `bert_tf.tasks.settings.FineTuningSettings`): what a run takes
    settings: str = ""
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

    def task_class(self):
        return _load(self.task)

    def fine_tuning_class(self):
        return _load(self.fine_tuning)

    def settings_class(self):
        return _load(self.settings)

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
