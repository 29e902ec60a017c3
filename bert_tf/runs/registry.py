"""The fine-tuning task kinds: one entry each says everything the rest of the package dispatches on.

A kind's name is used everywhere the kind is named: its folder (`bert_tf/tasks/<name>/`), the
`--export_type` that serves it, the `kind` of its run record (`fine_tuning_task.json`), its Task
class (`<Name>Task`). The entry gives its Keras model class and how a record sizes it, its
exporter, the original-checkpoint names of its head's variables and the record fields it keeps.

Each built-in task folder declares its own entry, in its `kind` module; this module imports
them by name when it is first imported (`bert_tf.tasks.BUILT_IN` lists the folders), and names no
task itself. A task outside the package registers its entry with `register`. An entry names its
Task, exporter, FineTuning and settings by string, imported when asked for, so reading a head name
(the checkpoint code does) loads no task's code beyond its entry and settings.
"""

import importlib

from bert_tf.runs.kinds import TaskKind  # noqa: F401 - the entries' shape, named here as before


def _built_in():
    """The kinds of this package's task folders, in the order `bert_tf.tasks.BUILT_IN` lists
    them: each folder's `kind` module declares its entry. Imported by name, so that this module
    imports no task (the tasks import it)."""
    tasks = importlib.import_module("bert_tf.tasks")
    return [importlib.import_module(f"bert_tf.tasks.{name}.kind").KIND for name in tasks.BUILT_IN]


class _Kinds(dict):
    """name -> TaskKind, the built-in kinds first, in their order: their folders' entries are
    imported on the first look at the table, not when this module loads, so that importing the
    run core loads no task folder until a kind is asked for."""

    _loaded = False

    def _load_built_in(self):
        if not _Kinds._loaded:
            _Kinds._loaded = True
            registered = dict(self)
            dict.clear(self)
            for kind in _built_in():
                dict.__setitem__(self, kind.name, kind)
            dict.update(self, {name: kind for name, kind in registered.items() if name not in self})


def _looking_first(name):
    """dict's method `name`, after the built-in kinds are loaded."""

    def method(self, *args, **kwargs):
        self._load_built_in()
        return getattr(dict, name)(self, *args, **kwargs)

    return method


for _name in ("__getitem__", "__contains__", "__iter__", "__len__", "__repr__", "__eq__", "get", "keys", "values",
              "items"):
    setattr(_Kinds, _name, _looking_first(_name))

KINDS = _Kinds()


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
