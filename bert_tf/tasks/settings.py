"""The settings every fine-tuning task shares: a task's settings class (its folder's
`settings.Settings`) is `FineTuningSettings` plus the groups it has and its own fields.

The field names are the original release's flag names and the defaults its flag defaults. The
groups (`bert_tf.training.groups`): the sources (checkpoint, config, vocabulary, casing), the run
(the original scripts' flags), evaluation, TPUs, training, LoRA, the search and the lengths and
padding; here, the data folder and tensorflow-datasets for the tasks that read them.
"""

from bert_tf.fields import SEARCH, Settings, setting, settings_class
from bert_tf.training.groups import Evaluation, Lora, Padding, RunSettings, Search, Sources, Tpu, Training

__all__ = ["DataDir", "Distillation", "Evaluation", "FineTuningSettings", "RunSettings", "Tfds", "Windows"]


@settings_class
class DataDir(Settings):
    """The task's data folder (a task redeclares the field with its own description)."""

    data_dir: str = setting(None, "The input data dir.", kind=str, shared=SEARCH, path=True, order=3)


@settings_class
class Tfds(Settings):
    """Reading the task's data through tensorflow-datasets."""

    tfds_name: str = setting(None, "Read the data through tensorflow-datasets.", kind=str, shared=SEARCH, order=4.6)
    tfds_data_dir: str = setting(None, "tensorflow-datasets' data_dir (default: its own).", kind=str)
    tfds_download: bool = setting(False, "Download and prepare the --tfds_name dataset if it is not there yet.")


@settings_class
class Windows(Settings):
    """Texts longer than --max_seq_length read as overlapping windows of it
    (`bert_tf.preprocessing.text_windows`)."""

    max_windows: int = setting(1, "How many windows of --max_seq_length a text may take; its pieces past the last "
                               "one are cut (and counted in the log). 1: the original's truncation.", shared=SEARCH,
                               order=19)
    doc_stride: int = setting(None, "With --max_windows above 1, the pieces between window starts, as run_squad.py's "
                              "flag (default: half of --max_seq_length).", kind=int, shared=SEARCH, order=19.1)

    def window_stride(self):
        """The stride windows take: `doc_stride`, or half of `max_seq_length` without one."""
        from bert_tf.preprocessing.text_windows import default_stride

        return self.doc_stride if self.doc_stride is not None else default_stride(self.max_seq_length)


# Distillation's defaults, measured (bench/distillation.py, docs/performance.md): students of three
# of all-MiniLM-L6-v2's six layers with transfer text. The teacher's targets alone (alpha 0, Well-Read
# Students' loss): for sentence embeddings alpha 0.5 fell from 0.776 to 0.577 dev MRR@10, below the
# labels alone (0.684); for classification 0.5 was ahead by 0.3 points at T 2 and 4 (2 of 600 dev
# sentences). T 2: 0.992 dev accuracy at alpha 0, against 0.965 at T 1 and 0.995 at T 4.
DEFAULT_TEMPERATURE = 2.0
DEFAULT_ALPHA = 0.0
# "auto" caches the teacher's outputs from this many epochs on and runs it in the step below: the
# cache costs one prediction pass over the training rows (measured: 1.1-2.3 epochs of the teacher
# in the step), the step one forward pass per epoch (bench/distillation.py --cache_only
# --cache_epochs=1,2,4: cached / in the step 0.84-0.95 of the time from 2 epochs on, 1.03-1.33 for
# classification at 1; docs/distillation.md).
CACHE_FROM_EPOCHS = 2.0
TEACHER_OUTPUTS = ("auto", "cached", "in_step")


@settings_class
class Distillation(Settings):
    """Training a student on a fine-tuned teacher's soft targets (`bert_tf.tasks.distillation`)."""

    teacher: str = setting(None, "A fine-tuned run of this task (its output folder, a search's best/, or a Hugging "
                           "Face folder with the task's head) whose outputs the student learns too.", kind=str,
                           shared=SEARCH, path=True, order=20)
    transfer_file: str = setting(None, "With --teacher, unlabelled inputs in the layout of the task's test file "
                                 "(run_squad.py: a --predict_file): trained on the teacher's targets alone.", kind=str,
                                 shared=SEARCH, path=True, order=20.1)
    student_layers: str = setting(None, "With --teacher, the student is the teacher's embeddings, these of its "
                                  "layers (comma-separated, from 0) and its head, e.g. 0,2,4 (DistilBERT's start).",
                                  kind=str, shared=SEARCH, order=20.2)
    distill_temperature: float = setting(DEFAULT_TEMPERATURE, "With --teacher, the softmax temperature of the "
                                         "teacher's and student's logits.", shared=SEARCH, order=20.3)
    distill_alpha: float = setting(DEFAULT_ALPHA, "With --teacher, the weight of the labels' loss; the teacher's "
                                   "targets take 1 - it.", shared=SEARCH, order=20.4)
    teacher_outputs: str = setting("auto", "With --teacher: cached (computed once before training, kept in "
                                   "--output_dir), in_step (the teacher runs in every step), or auto (cached from "
                                   f"{CACHE_FROM_EPOCHS:g} epochs on, the faster there).", kind=str,
                                   choices=TEACHER_OUTPUTS, shared=SEARCH, order=20.5)

    def caches_teacher(self, epochs):
        """Whether a run of `epochs` epochs caches its teacher's outputs (`teacher_outputs`)."""
        if self.teacher_outputs == "auto":
            return epochs >= CACHE_FROM_EPOCHS
        return self.teacher_outputs == "cached"


@settings_class
class FineTuningSettings(Sources, RunSettings, Tpu, Training, Lora, Search, Padding, Distillation):
    """The settings every fine-tuning task has; a task's class adds its groups and fields.

    A field marked `SEARCH` is shared by every run of a search and must be the same in a resumed
    run; one marked `RUN` must be the same in a resumed run (`bert_tf.fields`).
    """

    # The task kind (`bert_tf.runs.registry`) a class of settings runs.
    kind = ""


def tfds_help(example):
    """--tfds_name's description with a task's example datasets."""
    return f"Read the data through tensorflow-datasets (e.g. {example})."
