"""Reading a classification task through tensorflow-datasets instead of its TSV files.

A task's `tfds` attribute (a `TfdsSource`) names the TFDS dataset and its feature keys;
`read_tfds_examples` turns a split of it into the same `InputExample`s the TSV readers give, with
labels named as in the task's `get_labels()`. tensorflow_datasets is imported only when reading
(it is slow to import). The dataset must be prepared in `data_dir` (`tfds build glue/mrpc
--data_dir=...`) unless `download=True`.
"""

import dataclasses

from bert_tf.data.tfds import load_split
from bert_tf.tasks.classifier.processors import InputExample

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class TfdsSource:
    """Where a task's examples sit in a TFDS dataset."""

    name: str  # TFDS name, e.g. "glue/mrpc" (a version suffix "glue/mrpc:2.0.0" is allowed)
    text_a: str  # feature keys
    text_b: str | None = None
    label: str = "label"
    index: str | None = "idx"  # the submission id feature; None: the dataset has none
    splits: dict = dataclasses.field(  # our "train"/"dev"/"test" -> the TFDS split name
        default_factory=lambda: {"train": "train", "dev": "validation", "test": "test"}
    )
    extra_dev: dict = dataclasses.field(default_factory=dict)  # name -> TFDS split
    extra_test: dict = dataclasses.field(default_factory=dict)
    missing: dict = dataclasses.field(default_factory=dict)  # split -> why the dataset lacks it


def _tfds_split(processor, source, split):
    """("dev", "mismatched") / "dev" -> the TFDS split name, or a ValueError saying why not."""
    task = getattr(processor, "task_name", None) or type(processor).__name__
    base, extra = split if isinstance(split, tuple) else (split, None)
    if base not in SPLITS:
        raise ValueError(f"unknown split {split!r}: expected one of {SPLITS} or (split, extra)")
    if extra is None:
        if base not in source.splits:
            why = source.missing.get(base, f"the task maps only {sorted(source.splits)}")
            raise ValueError(f"task {task}: TFDS dataset {source.name} has no {base} split: {why}")
        return source.splits[base]
    extras = {"dev": source.extra_dev, "test": source.extra_test}.get(base, {})
    if extra not in extras:
        raise ValueError(
            f"task {task}: no extra {base} set {extra!r} in TFDS dataset {source.name} (extra "
            f"{base} sets: {sorted(extras)})"
        )
    return extras[extra]


def _label_names(processor, feature, where):
    """The label name of each ClassLabel id, in the task's own label names."""
    labels = processor.get_labels()
    names = list(getattr(feature, "names", None) or [])
    if names and all(n in labels for n in names):
        return names  # mnli, xnli, qnli, rte: TFDS and the TSV files use the same names.
    # cola, sst2, mrpc, qqp, wnli: TFDS's GLUE builder stores the TSV's "0"/"1" label as the
    # ClassLabel id int(label) (mrpc: int(Quality) of the original MSR files), so id i is the
    # TSV's label "i"; its names (unacceptable/acceptable, negative/positive,
    # not_equivalent/equivalent, not_duplicate/duplicate, not_entailment/entailment) are in that
    # order, i.e. 1 is the TSV's positive class.
    by_id = [str(i) for i in range(len(names))]
    if names and all(n in labels for n in by_id):
        return by_id
    raise ValueError(
        f"{where}: the label feature's classes {names} match the task's labels {labels} neither "
        "by name nor by id"
    )


def _text(value, processor, key, where):
    """A text feature as str; a multilingual one in the task's `language`."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    language = getattr(processor, "language", None)
    if language is None:
        raise ValueError(f"{where}: feature {key!r} is multilingual; the task sets no language")
    if "translation" in value:  # TranslationVariableLanguages: parallel language/text lists
        languages = [lang.decode("utf-8") for lang in value["language"]]
        value = dict(zip(languages, value["translation"], strict=True))
    if language not in value:  # Translation: language -> text
        raise ValueError(
            f"{where}: feature {key!r} has no text in language {language!r} (it has "
            f"{sorted(value)})"
        )
    return value[language].decode("utf-8")


def read_tfds_examples(processor, split, tfds_name=None, data_dir=None, download=False):
    """A split of `processor`'s task as `InputExample`s, read through TFDS.

    split: "train", "dev" or "test", or ("dev", name) / ("test", name) for the task's extra sets
      (mnli: ("dev", "mismatched")).
    tfds_name: the dataset to read instead of `processor.tfds.name` (same features), e.g. with a
      version: "glue/mrpc:2.0.0".
    data_dir: TFDS's data_dir (None: its default, ~/tensorflow_datasets or $TFDS_DATA_DIR).
    download: download and prepare the dataset if needed (else an unprepared one is an error).

    Labels are names from `processor.get_labels()` (regression: the float as a string); TFDS's
    -1 (an unlabelled test row) becomes None. `index` is the 'idx' feature as a string.
    """
    source = getattr(processor, "tfds", None)
    task = getattr(processor, "task_name", None) or type(processor).__name__
    if source is None:
        raise ValueError(f"task {task} has no TFDS source; read its files with --data_dir")
    regression = processor.label_kind == "regression"
    if processor.label_kind not in ("single", "regression"):
        raise ValueError(f"task {task}: TFDS reading supports single-label and regression tasks")
    name = tfds_name or source.name
    tfds_split = _tfds_split(processor, dataclasses.replace(source, name=name), split)
    where = f"TFDS dataset {name}, split {tfds_split}, data_dir {data_dir or '(TFDS default)'}"
    info, dataset = load_split(name, tfds_split, data_dir, download, where)

    names = None if regression else _label_names(processor, info.features[source.label], where)
    base, extra = split if isinstance(split, tuple) else (split, None)
    set_name = f"{base}_{extra}" if extra else base

    import tensorflow_datasets as tfds

    examples = []
    for position, row in enumerate(tfds.as_numpy(dataset)):
        index = str(int(row[source.index])) if source.index and source.index in row else None
        at = f"{where}, example {index if index is not None else position}"
        value = row[source.label]
        if value == -1:
            label = None
        elif regression:
            label = str(value)  # float32's shortest repr: 3.8, not 3.799999952316284
        else:
            label = names[int(value)]
        text_a = _text(row[source.text_a], processor, source.text_a, at)
        text_b = _text(row[source.text_b], processor, source.text_b, at) if source.text_b else None
        guid = f"{set_name}-{index if index is not None else position}"
        examples.append(InputExample(guid, text_a, text_b, label, index))
    return examples
