"""The fine-tuning task kinds: one entry each says everything the rest of the package dispatches on.

A kind's name is used everywhere the kind is named: its folder (`bert_tf/tasks/<name>/`), the
`--export_type` that serves it, the `kind` of its run record (`fine_tuning_task.json`), its Task
class (`<Name>Task`). The entry gives its Keras model class and how a record sizes it, its
exporter, the original-checkpoint names of its head's variables and the record fields it keeps.

This module imports the models (keras only) and nothing of the tasks themselves: the Task class
and the exporter are named by string and imported when asked for, so reading a head name (the
checkpoint code does) loads no task, and no task module can import its way back here in a circle.
"""

import dataclasses
import importlib

from bert_tf.models import (
    BertClassifier,
    BertFeatureTagger,
    BertMultipleChoice,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)


@dataclasses.dataclass(frozen=True)
class TaskKind:
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


def _ner_model_args(record):
    args = {"num_classes": len(record.labels)}
    if record.feature_based is not None:  # BertFeatureTagger's (the kind's model_variant)
        args["feature_based"] = record.feature_based
        if record.lstm_units is not None:
            args["lstm_units"] = record.lstm_units
    return args


def _classifier_outputs(record):
    return {"num_classes": 1 if record.label_kind == "regression" else len(record.labels)}


# run_classifier.create_model's and run_squad.create_model's top-level head variables; the token
# classifier (one output per tag) and the multiple-choice model (one score) use the classifier's.
_CLASSIFIER_HEAD = ("output_weights", "output_bias")

KINDS = {
    kind.name: kind
    for kind in (
        TaskKind(
            name="classifier", script="run_classifier.py", model_class=BertClassifier, head_layer="classifier",
            head_names=_CLASSIFIER_HEAD, record_fields=("label_kind", "labels", "pair"),
            task="bert_tf.tasks.classifier.task:ClassifierTask",
            exporter="bert_tf.tasks.classifier.export:export_run",
            fine_tuning="bert_tf.tasks.classifier.fine_tuning:ClassifierFineTuning",
            settings="bert_tf.tasks.classifier.settings:Settings", model_args=_classifier_outputs,
            label_kinds=("single", "regression", "multi"),
            hf_architecture="BertForSequenceClassification", hf_head="classifier",
        ),
        TaskKind(
            name="squad", script="run_squad.py", model_class=BertSpanLabeler, head_layer="span_head",
            head_names=("cls/squad/output_weights", "cls/squad/output_bias"),
            record_fields=("version_2_with_negative", "doc_stride", "max_query_length"),
            task="bert_tf.tasks.squad.task:SquadTask", exporter="bert_tf.tasks.squad.export:export_run",
            fine_tuning="bert_tf.tasks.squad.fine_tuning:SquadFineTuning",
            settings="bert_tf.tasks.squad.settings:Settings",
            legacy_names=("span_labeler",),
            hf_architecture="BertForQuestionAnswering", hf_head="qa_outputs", hf_pooler=False,
        ),
        TaskKind(
            name="ner", script="run_ner.py", model_class=BertTokenClassifier, head_layer="classifier",
            head_names=_CLASSIFIER_HEAD,
            record_fields=("label_kind", "labels", "window_context_words", "feature_based", "lstm_units"),
            task="bert_tf.tasks.ner.task:NerTask", exporter="bert_tf.tasks.ner.export:export_run",
            fine_tuning="bert_tf.tasks.ner.fine_tuning:NerFineTuning",
            settings="bert_tf.tasks.ner.settings:Settings",
            model_args=_ner_model_args, legacy_names=("token_classifier",),
            label_kinds=("token",),
            hf_architecture="BertForTokenClassification", hf_head="classifier", hf_pooler=False,
            model_variant=lambda record: BertFeatureTagger if record.feature_based is not None else None,
        ),
        TaskKind(
            name="swag", script="run_swag.py", model_class=BertMultipleChoice, head_layer="classifier",
            head_names=_CLASSIFIER_HEAD, record_fields=("num_choices",),
            task="bert_tf.tasks.swag.task:SwagTask", exporter="bert_tf.tasks.swag.export:export_run",
            fine_tuning="bert_tf.tasks.swag.fine_tuning:SwagFineTuning",
            settings="bert_tf.tasks.swag.settings:Settings",
            model_args=lambda record: {"num_choices": record.num_choices}, legacy_names=("multiple_choice",),
            hf_architecture="BertForMultipleChoice", hf_head="classifier",
        ),
        TaskKind(
            name="embedder", script="run_sentence_embedding.py", model_class=BertSentenceEmbedder, head_layer="",
            head_names=(), record_fields=("pooling", "normalize", "similarity_scale"),
            task="bert_tf.tasks.embedder.task:EmbedderTask", exporter="bert_tf.tasks.embedder.export:export_run",
            fine_tuning="bert_tf.tasks.embedder.fine_tuning:EmbedderFineTuning",
            settings="bert_tf.tasks.embedder.settings:Settings",
            model_args=lambda record: {"pooling": record.pooling or "mean", "normalize": bool(record.normalize)},
            dev_metrics=("mrr_at_10", "spearman"),
        ),
    )
}


def register(kind):
    """Adds the TaskKind `kind`: a task outside this package registers its own when imported. A
    ValueError when its name, one of its old names or its model class is another kind's, or when
    it names no Task, exporter or FineTuning. Registering the same entry again changes nothing."""
    if KINDS.get(kind.name) == kind:
        return kind
    if kind.name in KINDS:
        raise ValueError(f"task kind {kind.name!r} is already a kind")
    taken = {name for other in KINDS.values() for name in (other.name, *other.legacy_names)}
    clash = sorted({kind.name, *kind.legacy_names} & taken)
    if clash:
        raise ValueError(f"task kind {kind.name!r}: the name(s) {', '.join(clash)} are another kind's")
    same_model = [other.name for other in KINDS.values() if other.model_class is kind.model_class]
    if same_model:
        raise ValueError(f"task kind {kind.name!r}: its model class {kind.model_class.__name__} is kind "
                         f"{same_model[0]}'s (a kind is found by its model's class)")
    for part in ("task", "exporter", "fine_tuning"):
        if ":" not in getattr(kind, part):
            raise ValueError(f"task kind {kind.name!r}: {part}={getattr(kind, part)!r} is not a \"module:Name\"")
    KINDS[kind.name] = kind
    return kind


def get(name):
    """The kind called `name` (or, for records written before kinds had one name, its old name);
    a ValueError listing the kinds for any other."""
    if name in KINDS:
        return KINDS[name]
    for kind in KINDS.values():
        if name in kind.legacy_names:
            return kind
    raise ValueError(f"unknown fine-tuning task kind {name!r}; known: {', '.join(KINDS)}")


def of_model(model):
    """The kind whose model `model` is, or None (an encoder, a pre-trainer, another model)."""
    for kind in KINDS.values():
        if type(model) is kind.model_class:
            return kind
    return None


def of_hf_architecture(architecture):
    """The kind whose model transformers calls `architecture` (`BertForSequenceClassification`
    ...), or None."""
    for kind in KINDS.values():
        if kind.hf_architecture == architecture:
            return kind
    return None
