"""A fine-tuning run with a teacher (`bert_tf.tasks.settings.Distillation`): the teacher read and
checked against the student before any work, the student's config and starting weights, its run
record, and its task wrapped for the loop (`bert_tf.training.distillation.DistilledTask`).

The teacher is a fine-tuned run of the same kind: one of ours (a run's folder, or a search's, whose
best/ run it is), or a Hugging Face folder with the task's head. It must read the student's inputs
as it read its own: the same vocabulary (by its tokens), casing and labels (the fields its kind's
`FineTuning.teacher_fields` names), and positions for max_seq_length.

With `student_layers`, the student is the teacher cut down: its config the teacher's with those
layers only, its starting weights the teacher's embeddings, those layers, pooler and head
(`init_checkpoint` becomes the teacher; `copy_from_teacher`). Otherwise the student starts from
its own `init_checkpoint` (a small pre-trained BERT) and config.
"""

import dataclasses
import os

from absl import logging

from bert_tf.errors import SettingError, reported, shown

__all__ = ["Teacher", "read_teacher", "student_layers"]

# The settings that mean nothing without a teacher.
_WITH_TEACHER = ("transfer_file", "student_layers", "distill_temperature", "distill_alpha", "teacher_outputs")


@dataclasses.dataclass(frozen=True)
class Teacher:
    """A teacher as read from its folder.

    Attributes:
        path: The folder (or checkpoint) given as `teacher`.
        record: Its run's RunRecord (a Hugging Face folder's, as `sources.run_record_for` reads it).
        config: Its BertConfig.
        vocab_file: Its vocabulary.
        layers: The layers a student cut from it keeps (`student_layers`); None: the student is its own.
    """

    path: str
    record: object
    config: object
    vocab_file: str
    layers: tuple | None = None

    def model(self):
        """The teacher's fine-tuned model (build it under the strategy's scope).

        Returns:
            The model of its run's kind, its weights restored (a LoRA run's merged).
        """
        from bert_tf.checkpoints import sources

        with sources.prefixed(f"{shown.teacher}={self.path}: "):
            return sources.task_model(self.path, self.record, self.config)[0]


def student_layers(text, num_layers):
    """The teacher's layers a student keeps.

    Args:
        text: The indices, comma-separated ("0,2,4").
        num_layers: The teacher's layers.

    Returns:
        A tuple of ints.

    Raises:
        ValueError: Not distinct indices in increasing order below `num_layers` (naming `student_layers`).
    """
    try:
        layers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"{shown.student_layers}={text!r}: expected layer indices separated by commas, "
                         "e.g. 0,2,4") from None
    if not all(0 <= i < num_layers for i in layers) or list(layers) != sorted(set(layers)):
        raise ValueError(f"{shown.student_layers}={text}: expected distinct indices in increasing order, each from "
                         f"0 to {num_layers - 1} (the teacher has {num_layers} layers)")
    return layers


def read_teacher(path, kind):
    """Reads a teacher's run.

    Args:
        path: Its folder (or checkpoint), as `teacher` gives it.
        kind: The task kind it must be of.

    Returns:
        A `Teacher`.

    Raises:
        ValueError, FileNotFoundError: `path` holds no fine-tuned run of `kind` with its config and
            vocabulary (the message names `teacher`).
    """
    from bert_tf.checkpoints import sources

    if not os.path.exists(path):
        raise FileNotFoundError(f"{shown.teacher}={path}: no such folder or file")
    with sources.prefixed(f"{shown.teacher}={path}: "):
        record = sources.run_record_for(path, kind)
        config, _ = sources.config_of(path)
    vocab_file = sources.beside(path, "vocab.txt")
    if config is None or vocab_file is None:
        raise ValueError(f"{shown.teacher}={path}: no {'bert_config.json' if config is None else 'vocab.txt'} "
                         "beside it; give a fine-tuning run's output folder")
    return Teacher(path, record, config, vocab_file)


def resolve(settings, config, kind, given):
    """The student's settings and config with its teacher's (the module docstring).

    Args:
        settings: The run's settings, their sources resolved (`prepare.resolve_sources`).
        config: Its BertConfig, or None where the caller reads `bert_config_file`.
        kind: The task kind.
        given: `given(name)`: whether the user gave setting `name` (not its default).

    Returns:
        `(settings, config or None, Teacher or None)`.

    Raises:
        SettingError: A setting that needs a teacher without one, a teacher of another kind, casing or
            vocabulary, or student layers that are not the teacher's.
    """
    f = settings
    if not f.teacher:
        idle = [name for name in _WITH_TEACHER if given(name)]
        if idle:
            raise SettingError(f"--{idle[0]} is read only with --teacher (a fine-tuned run to distill)", idle[0])
        return f, config, None
    with reported(flag_names=("teacher", "distill_temperature", "distill_alpha")):
        teacher = read_teacher(f.teacher, kind)
        check_range(f.distill_temperature, f.distill_alpha)
    changes = {}
    if teacher.record.do_lower_case != f.do_lower_case:
        if given("do_lower_case"):
            raise SettingError(f"--do_lower_case={f.do_lower_case}, but the teacher {f.teacher} was fine-tuned with "
                               f"--do_lower_case={teacher.record.do_lower_case}", "do_lower_case")
        changes["do_lower_case"] = teacher.record.do_lower_case
    if f.vocab_file:
        from bert_tf.checkpoints import sources

        with reported(flag_names=("vocab_file",), setting="teacher"):
            sources.check_own_vocab(f.vocab_file, teacher.path)
    else:
        changes["vocab_file"] = teacher.vocab_file
    if f.student_layers:
        clash = [name for name in ("init_checkpoint", "bert_config_file") if given(name)]
        if clash:
            raise SettingError(f"--student_layers builds the student from the teacher's layers: --{clash[0]} is not "
                               "read with it", clash[0])
        with reported(flag_names=("student_layers",)):
            teacher = dataclasses.replace(teacher, layers=student_layers(f.student_layers,
                                                                         teacher.config.num_hidden_layers))
        config = dataclasses.replace(teacher.config, num_hidden_layers=len(teacher.layers))
        changes["init_checkpoint"] = teacher.path  # the student's start: restoring it copies the layers
    positions = teacher.config.max_position_embeddings
    if f.max_seq_length > positions:
        raise SettingError(f"--max_seq_length={f.max_seq_length}: the teacher {f.teacher} has {positions} positions",
                           "max_seq_length")
    if not f.do_train:
        logging.warning("--teacher trains a student: this run does not train, and reads the student only")
    return dataclasses.replace(f, **changes), config, teacher


def transfer_path(path):
    """`path`, a transfer file that exists (a task's reader reads it in its test file's layout:
    `FineTuning.read_transfer`).

    Args:
        path: The `transfer_file` setting.

    Returns:
        `path`.

    Raises:
        FileNotFoundError: No file is there, or a folder (the message names `transfer_file`).
    """
    if os.path.isdir(path):
        raise FileNotFoundError(f"{shown.transfer_file}={path} is a folder: give the file of unlabelled inputs")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{shown.transfer_file}={path}: no such file")
    return path


def check_range(temperature, alpha):
    """A ValueError naming the setting unless the temperature is positive and alpha in [0, 1]."""
    if not temperature > 0:
        raise ValueError(f"{shown.distill_temperature}={temperature} must be positive")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"{shown.distill_alpha}={alpha} must be between 0 and 1")


def check_record(teacher, record, fields):
    """A SettingError unless the teacher's run has the student's `fields` (its labels, ...)."""
    for name in fields:
        mine, theirs = getattr(record, name, None), getattr(teacher.record, name, None)
        if mine != theirs:
            raise SettingError(f"--teacher={teacher.path} has {name} {_listed(theirs)}, this run "
                               f"{_listed(mine)}: a teacher must read the student's inputs and give its outputs",
                               "teacher")


def _listed(value):
    return list(value) if isinstance(value, tuple) else value


def recorded(record, settings, teacher):
    """`record` naming its teacher and the distillation settings (none without a teacher)."""
    if teacher is None:
        return record
    f = settings
    distillation = {"teacher": os.path.abspath(teacher.path), "distill_temperature": f.distill_temperature,
                    "distill_alpha": f.distill_alpha}
    if teacher.layers is not None:
        distillation["student_layers"] = list(teacher.layers)
    if f.transfer_file:
        distillation["transfer_file"] = os.path.abspath(f.transfer_file)
    distillation["teacher_outputs"] = teacher_outputs(f)
    return dataclasses.replace(record, distillation=distillation)


def teacher_outputs(settings):
    """How the run takes its teacher's outputs: "cached" or "in_step" (`teacher_outputs`; "auto" by
    the epochs, `caches_teacher`). A run resumed or trained further keeps what its record says it
    took: "auto" is resolved once, when the run starts, and not again with other epochs."""
    from bert_tf.runs import record as records

    f = settings
    if f.teacher_outputs == "auto" and f.do_train:
        earlier = records.read(f.output_dir) if os.path.isdir(f.output_dir) else None
        taken = (earlier.distillation or {}).get("teacher_outputs") if earlier is not None else None
        if taken in ("cached", "in_step"):
            return taken
    return "cached" if f.caches_teacher(f.num_train_epochs) else "in_step"


def distilled(task, settings, teacher, record, replicas=1):
    """The run's Task with its teacher (`DistilledTask`); `task` itself without one, or without
    training. Its teacher's outputs are cached in `output_dir` where the run's `record` says so
    (`recorded`: `teacher_outputs`), the cache made for that record, in batches of one replica's
    micro-batch (of `replicas`): a batch each device is known to hold, with room for gradients."""
    from bert_tf.training.distillation import DistilledTask, TeacherCache

    f = settings
    if teacher is None or not f.do_train:
        return task
    cache = None
    if (record.distillation or {}).get("teacher_outputs") == "cached":  # as `recorded` resolved it
        batch = max(1, f.train_batch_size // (max(f.gradient_accumulation_steps, 1) * replicas))
        cache = TeacherCache(f.output_dir, batch, repr(record))
    return DistilledTask(task, teacher.model, f.distill_temperature, f.distill_alpha, teacher.layers, teacher.path,
                         cache)


def train_data(trainer, data):
    """The training data of a run: with its teacher's outputs where it caches them
    (`DistilledTask.with_teacher_outputs`; the chief writes the cache), `data` itself otherwise,
    and for a run whose latest checkpoint has all its steps (nothing is left to train)."""
    import tensorflow as tf

    task = trainer.task
    if getattr(task, "cache", None) is None:
        return data
    s = trainer.settings
    latest = tf.train.latest_checkpoint(s.output_dir) if os.path.isdir(s.output_dir) else None
    if latest and int(latest.rsplit("-", 1)[1]) >= s.num_train_steps:
        return data
    return task.with_teacher_outputs(data, write=trainer.is_chief, strategy=trainer.strategy)


def describe(trainer):
    """The log line of a distilled run's models: `Student: N parameters; teacher T: M parameters`."""
    task = trainer.task
    if getattr(task, "teacher", None) is None:
        return None
    return (f"Student: {trainer.model.count_params():,} parameters; teacher {task.teacher_path}: "
            f"{task.teacher.count_params():,} parameters")
