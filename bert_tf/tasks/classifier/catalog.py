"""The named classification tasks: the built-in ones (GLUE, XNLI, multi-label), loaded here,
and those registered with `processors.register_task` (e.g. by a `--task_module`); a name ->
its processor, and reading a split of one."""

import inspect

from bert_tf.tasks.classifier import glue, multilabel, processors  # noqa: F401 - glue, multilabel: registers the built-in tasks
from bert_tf.tasks.classifier.tfds import read_tfds_examples


def task_names():
    return sorted(processors.TASKS)


def create_processor(name, *, describe_option=str, **options):
    """A processor for task `name` (case-insensitive).

    `options` (e.g. xnli_language="zh", labels_file="labels.txt") go to the processor's
    constructor, each only if the constructor has a parameter of that name; None means "not
    given". A required parameter without an option is a ValueError naming each missing option
    as `describe_option(name)` says (a script adds the flag that gives it).
    """
    key = name.strip().lower()
    if key not in processors.TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    cls = processors.TASKS[key]
    params = inspect.signature(cls).parameters.values()
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    kwargs = {k: v for k, v in options.items() if v is not None and (takes_any or k in accepted)}
    missing = [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in kwargs
    ]
    if missing:
        needs = ", ".join(describe_option(m) for m in missing)
        raise ValueError(f"task {key!r} needs the option(s) {needs}")
    return cls(**kwargs)


def processor_for_tfds(tfds_name):
    """The first registered task whose TFDS source is `tfds_name` (a version suffix is ignored).

    "glue/mnli" -> "mnli" (mnli-mm reads the same dataset and is registered after it).
    """
    wanted = tfds_name.split(":")[0].strip().lower()
    for key, cls in processors.TASKS.items():
        source = getattr(cls, "tfds", None)
        if source is not None and source.name.split(":")[0].lower() == wanted:
            return key
    return None


def read_split(processor, split, data_dir=None, tfds_name=None, tfds_data_dir=None, tfds_download=False):
    """A split's examples and its extra sets, from `data_dir`'s files or, with `tfds_name`,
    through TFDS: `(examples, extras)`; extras are name -> examples for "dev" (mnli's
    mismatched set) and name -> (submission stem, examples) for "test"."""
    if tfds_name:
        def read(which):
            return read_tfds_examples(processor, which, tfds_name, tfds_data_dir, download=tfds_download)

        examples = read(split)
        source = processor.tfds
        if split == "dev":
            return examples, {name: read(("dev", name)) for name in source.extra_dev}
        if split == "test":
            stems = {name: stem for name, (stem, _) in getattr(processor, "extra_test_files", {}).items()}
            return examples, {name: (stems.get(name), read(("test", name))) for name in source.extra_test}
        return examples, {}
    examples = getattr(processor, f"get_{split}_examples")(data_dir)
    if split == "dev":
        return examples, processor.get_extra_dev_examples(data_dir)
    if split == "test":
        return examples, processor.get_extra_test_examples(data_dir)
    return examples, {}
