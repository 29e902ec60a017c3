"""The run record: what a fine-tuning run leaves beside its checkpoints (`fine_tuning_task.json`)
so that exports, checkpoint conversion and later runs can rebuild and feed its model.

Every run keeps its kind, task name, casing and max_seq_length; each kind keeps the fields its
registry entry names (`TaskKind.record_fields`); a LoRA run, its adapters' rank and alpha (`lora_settings`; whoever
reads its checkpoints must give its model the same adapters); a run that grouped its training
batches by length, `group_by_length` (a resumed run must continue the same batch order). The
defaults below are the only ones.
"""

import dataclasses
import json
import os
import re

from bert_tf.errors import shown
from bert_tf.io_utils import atomic_write, read_json_object
from bert_tf.runs import registry

FILE_NAME = "fine_tuning_task.json"
# A fine-tuning search's folder (`bert_tf.training.search`): its record, and the link to its chosen run.
SEARCH_FILE = "search.json"
BEST = "best"
# What a run that trains into a folder holding an earlier run (resuming it) must keep: they decide
# its batches, so steps taken with other values would be mixed in one model under one record.
RESUMED_FIELDS = ("max_seq_length", "group_by_length")
_COMMON = ("kind", "task_name", "do_lower_case", "max_seq_length")
_LORA = ("lora_rank", "lora_alpha")  # kept by LoRA runs only
# The settings of long texts' windows (`bert_tf.tasks.settings.Windows`), in the kinds that have
# them: kept by runs that read more than one window only, so a run that cuts its texts, as the
# original, writes the file it wrote.
_WINDOWS = ("max_windows", "doc_stride", "window_pooling")


def lora_settings(lora_rank=0, lora_alpha=None):
    """`{"lora_rank", "lora_alpha"}` checked, lora_alpha resolved: LoRA's adapters (see
    `bert_tf.models.lora`) have rank `lora_rank` (0: no adapters, every weight trains) and scale
    lora_alpha / lora_rank, lora_alpha defaulting to the rank (a scale of 1: Keras's `enable_lora`
    and PEFT's default, and the LoRA paper's choice of alpha as the first rank tried, §4). A
    ValueError starting with the setting at fault otherwise."""
    if isinstance(lora_rank, bool) or not isinstance(lora_rank, int) or lora_rank < 0:
        raise ValueError(f"{shown.lora_rank}={lora_rank} must be a non-negative integer (0: LoRA off)")
    if lora_alpha is not None and not lora_rank:
        raise ValueError(f"{shown.lora_alpha}={lora_alpha} is given without {shown.lora_rank}: LoRA is off")
    if lora_alpha is not None and not lora_alpha > 0:  # also NaN
        raise ValueError(f"{shown.lora_alpha}={lora_alpha} must be positive")
    alpha = float(lora_rank if lora_alpha is None else lora_alpha) if lora_rank else None
    return {"lora_rank": lora_rank, "lora_alpha": alpha}


@dataclasses.dataclass(frozen=True, init=False)
class RunRecord:
    """What a fine-tuning run keeps beside its checkpoints: the fields every run keeps, and its
    kind's own.

    A kind declares its own fields and their defaults in its registry entry
    (`TaskKind.record_fields`, in the task's folder); this class names none of them. They are
    given as keyword arguments, kept in `options` and read as attributes (`record.doc_stride`). A
    copy with another value: `dataclasses.replace(record, doc_stride=64)`. A task's FineTuning
    writes its run's record from the run's settings, and `settings_values` gives them back.

    Args:
        kind: The task kind (`bert_tf.runs.registry`), or an old name of it.
        task_name: The task's name, e.g. "mrpc" or "squad".
        do_lower_case: Whether the run's inputs were lower-cased.
        max_seq_length: The length the run's inputs were cut to.
        lora_rank: The rank of the run's LoRA adapters; 0: none (`lora_settings`).
        lora_alpha: Their alpha (the scale is lora_alpha / lora_rank); None: the rank's.
        group_by_length: Whether the run's training batches group examples of similar length.
            The length bucket is not kept: it changes where padding is cut, not the results.
        distillation: A distilled run's teacher and distillation settings (name -> value); None.
        options: The kind's own fields, name -> value (as `fields` are given).
        **fields: The kind's own fields; a field not given takes the kind's default.

    Raises:
        ValueError: An unknown kind, a field that is not the kind's, or bad LoRA settings.
    """

    kind: str
    task_name: str
    do_lower_case: bool = True
    max_seq_length: int = 128
    lora_rank: int = 0
    lora_alpha: float | None = None
    group_by_length: bool = False
    # A distilled run's teacher and settings (`bert_tf.tasks.distillation.recorded`); None: no teacher.
    distillation: dict | None = dataclasses.field(default=None, hash=False)
    # The kind's own fields that are set (not None): name -> value, written flat into the file.
    options: dict = dataclasses.field(default_factory=dict, hash=False)

    def __init__(self, kind, task_name, do_lower_case=True, max_seq_length=128, lora_rank=0, lora_alpha=None,
                 group_by_length=False, distillation=None, options=None, **fields):
        task_kind = registry.get(kind)
        given = {**(options or {}), **fields}
        defaults = task_kind.record_defaults
        foreign = sorted(set(given) - set(defaults))
        if foreign:
            raise ValueError(f"{', '.join(foreign)}: not a field of kind {task_kind.name} (its fields: "
                             f"{', '.join(defaults)})")
        # None is not a value of any field: a field given None takes its default, as one absent from a file does.
        own = {name: default if given.get(name) is None else given[name] for name, default in defaults.items()}
        values = dict(
            kind=task_kind.name, task_name=task_name, do_lower_case=do_lower_case, max_seq_length=max_seq_length,
            **lora_settings(lora_rank, lora_alpha), group_by_length=group_by_length,
            distillation=dict(distillation) if distillation else None,
            options={name: tuple(v) if isinstance(v, list) else v for name, v in own.items() if v is not None},
        )
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __getattr__(self, name):  # only for names that are not attributes: the kind's own fields
        options = self.__dict__.get("options") or {}
        if name in options:
            return options[name]
        kind = self.__dict__.get("kind")
        if kind is not None and name in registry.get(kind).record_defaults:
            return None  # a field of the kind this record leaves unset
        raise AttributeError(f"{type(self).__name__} of kind {self.__dict__.get('kind')!r} has no field {name!r}")

    @property
    def task_kind(self):
        return registry.get(self.kind)

    def settings_values(self):
        """The record's values of its kind's settings.

        Returns:
            name -> value of each field the kind reads from settings (`TaskKind.settings_fields`),
            with the casing and max_seq_length: `dataclasses.replace(settings, **values)` gives a
            run the settings this one was made with.
        """
        names = ("do_lower_case", "max_seq_length", *self.task_kind.settings_fields)
        return {name: getattr(self, name) for name in names}

    def to_dict(self):
        """The fields every run keeps and those of its kind (as written to the file), but for
        an option the run did not take (None; LoRA's when lora_rank is 0; group_by_length when False;
        the windows' when max_windows is 1)."""
        names = _COMMON + tuple(self.task_kind.record_defaults) + (_LORA if self.lora_rank else ())
        if "max_windows" in self.task_kind.record_defaults and self.max_windows == 1:
            names = tuple(name for name in names if name not in _WINDOWS)
        names += ("group_by_length",) if self.group_by_length else ()
        names += ("distillation",) if self.distillation else ()
        values = {name: getattr(self, name, None) for name in names}
        return {name: list(v) if isinstance(v, tuple) else v for name, v in values.items() if v is not None}

    @classmethod
    def from_dict(cls, values, source=FILE_NAME):
        """A record from its file's dict; a record written before kinds had one name (with
        "model": "span_labeler", ..., and every kind's fields, as the one record class then had
        them) reads too. An unknown key or kind is a ValueError naming `source`."""
        values = dict(values)
        written_before_kinds = "kind" not in values
        model = values.pop("model", None)
        if written_before_kinds:  # the first release's records name no model: the kind that says it wrote them
            unnamed = [kind.name for kind in registry.KINDS.values() if kind.unnamed_records]
            values["kind"] = model if model is not None else (unnamed[0] if unnamed else "")
        try:
            kind = registry.get(values["kind"])
            if written_before_kinds:  # another kind's fields, which that one class had: not this run's
                others = {name for other in registry.KINDS.values() for name in other.record_defaults}
                values = {k: v for k, v in values.items() if k not in others - set(kind.record_defaults)}
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None
        known = {f.name for f in dataclasses.fields(cls)} - {"options"}
        unknown = sorted(set(values) - known - set(kind.record_defaults))
        if unknown:
            known_names = sorted(known | set(kind.record_defaults))
            raise ValueError(f"{source}: unknown field(s) {', '.join(unknown)} (known: {', '.join(known_names)})")
        if "task_name" not in values:
            raise ValueError(f"{source}: no task_name")
        try:
            return cls(**values)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None

    def write(self, directory):
        """Writes FILE_NAME in `directory` (atomically)."""
        os.makedirs(directory, exist_ok=True)
        with atomic_write(os.path.join(directory, FILE_NAME)) as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")


# Beside the record of a run that trained: the settings that decided its steps, as the script took
# them (name -> value: learning rate, batch size, seed, data, starting checkpoint, optimizer, ...).
# A run resumed in the folder must give the same (`bert_tf.training.run.check_earlier_run`). A file
# of its own, so that the record stays what exports and earlier versions read.
TRAINING_FILE = "training_settings.json"


def write_training_settings(directory, settings):
    """Writes TRAINING_FILE in `directory` (atomically): `settings`, name -> a JSON value."""
    os.makedirs(directory, exist_ok=True)
    with atomic_write(os.path.join(directory, TRAINING_FILE)) as f:
        json.dump(settings, f, indent=2, sort_keys=True)
        f.write("\n")


def read_training_settings(directory):
    """The TRAINING_FILE of the run in `directory`, or None (a run written before runs kept it)."""
    path = os.path.join(directory, TRAINING_FILE)
    return read_json_object(path) if os.path.isfile(path) else None


def changed_setting(earlier, given):
    """The first setting of `given` (name -> value) that the `earlier` settings (as their file gives
    them back) hold otherwise: `(name, earlier value, given value)`, or None. A setting that only
    one side has is not compared (kept by one version and not the other)."""
    for name, value in given.items():
        as_read = json.loads(json.dumps(list(value) if isinstance(value, tuple) else value))
        if name in earlier and earlier[name] != as_read:
            return name, earlier[name], value
    return None


def read(directory):
    """The record a run left in `directory`, or None when there is none; an unreadable one is a
    ValueError naming the file."""
    path = os.path.join(directory, FILE_NAME)
    if not os.path.isfile(path):
        return None
    return RunRecord.from_dict(read_json_object(path), path)


def run_directory(checkpoint):
    """The folder of a run, from what `--init_checkpoint` may name: the folder itself, one of its
    ckpt-N or a .keras file in it."""
    return checkpoint if os.path.isdir(checkpoint) else os.path.dirname(os.path.abspath(checkpoint))


def adapters(checkpoint):
    """`(lora_rank, lora_alpha)` of the LoRA run whose checkpoint (or folder) `checkpoint` is, from
    the record beside it; None for any other checkpoint."""
    found = read(run_directory(checkpoint))
    return (found.lora_rank, found.lora_alpha) if found is not None and found.lora_rank else None


def is_search(path):
    """Whether the folder `path` holds a fine-tuning search (its SEARCH_FILE)."""
    return bool(path) and os.path.isfile(os.path.join(path, SEARCH_FILE))


def check_not_search(path, setting):
    """A ValueError when `path` (which `setting` gave) is the folder of a fine-tuning search: its
    runs are in subfolders, and its `best` link is the one it chose (the hint
    `bert_tf.training.search.check_not_search_folder` gives for an output folder)."""
    if is_search(path):
        raise ValueError(
            f"{shown(setting)}={path} holds a search ({SEARCH_FILE}): use {shown(setting)}={os.path.join(path, BEST)}, "
            "its chosen run"
        )


# Files that make a folder another program's model: training into it would mix our checkpoints,
# bert_config.json and vocab.txt into that model's files (which its loaders would then read).
_OTHER_MODELS = {
    "a sentence-transformers model": ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"),
    "a Hugging Face model": (
        "config.json", "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
        "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json",
    ),
    "a SavedModel (an export)": ("saved_model.pb", "saved_model.pbtxt", "fingerprint.pb"),
}
# A TensorFlow checkpoint of another program: Google's bert_model.ckpt, the original's model.ckpt-N
# (ours are ckpt-N).
_OTHER_CHECKPOINT = re.compile(r".+\.ckpt(-\d+)?\.index")
# What a run of ours writes beside its record (before it, nothing of these exists in its folder).
_RUN_FILES = ("bert_config.json", "vocab.txt")


def other_model_files(folder, ours=False):
    """`(what, names)` when `folder` holds another program's model (`_OTHER_MODELS`, another
    program's checkpoint), else None. Unless the folder is `ours` (it holds one of our records),
    a bert_config.json or vocab.txt counts too: a run writes those beside its record only, so a
    folder that has them without one is a model's folder (Google's release layout)."""
    if not os.path.isdir(folder):
        return None
    entries = set(os.listdir(folder))
    for what, names in _OTHER_MODELS.items():
        found = sorted(entries & set(names))
        if found:
            return what, found
    checkpoints = sorted(name for name in entries if _OTHER_CHECKPOINT.fullmatch(name))
    if checkpoints:
        return "another program's TensorFlow checkpoint", checkpoints
    found = sorted(entries & set(_RUN_FILES))
    if found and not ours:
        return f"a model's files without a {FILE_NAME}", found
    keras_files = sorted(name for name in entries if name.endswith(".keras"))
    if keras_files and not ours:
        return "a Keras model file", keras_files
    return None


def check_not_other_model(output_dir, setting="output_dir", ours=False):
    """A ValueError naming `output_dir` (given as `setting`) and what it holds when it is another
    program's model folder (`other_model_files`): nothing of a run is written into it."""
    found = other_model_files(output_dir, ours)
    if found:
        what, names = found
        # An export holds no checkpoint a run could start from.
        start = f" (to start from that model, pass {shown.init_checkpoint}={output_dir})"
        start = "" if what.startswith("a SavedModel") else start
        raise ValueError(
            f"{shown(setting)}={output_dir} holds {what} ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}), "
            "not a "
            f"run of bert_tf: a run would write its checkpoints and files into it. Use another {shown(setting)}{start}"
        )
