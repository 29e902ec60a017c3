"""The old names of `bert_tf.training`'s modules (see `bert_tf._deprecated`): pre-training
re-exported the loop's gradient clipping norm, which lives in `bert_tf.training.trainer`; the text-in
exports' XLA rule (`speed.choose_serving_jit_compile`, INT8_SOURCE) lives with the serving formats in
`bert_tf.export.serving`, a layer up, so it is imported only when an old name is used; the run's
check of an earlier run in its output folder is `run.check_earlier_run` (`check_output_dir` is
`bert_tf.io_utils`' check that a folder can be written)."""

from bert_tf._deprecated import resolver, same_names

MOVED = {
    "bert_tf.training.pretraining": {"CLIP_NORM": "bert_tf.training.trainer:CLIP_NORM"},
    "bert_tf.training.run": {"check_output_dir": "bert_tf.training.run:check_earlier_run"},
    "bert_tf.training.speed": same_names("bert_tf.export.serving", "INT8_SOURCE choose_serving_jit_compile"),
}
moved = resolver(MOVED)
