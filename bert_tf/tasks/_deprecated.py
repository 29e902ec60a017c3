"""The old names of `bert_tf.tasks` (see `bert_tf._deprecated`): the Task contract, which moved
to `bert_tf.training.task` (the one loop's layer), imported only when the old name is used so
that importing this package still loads nothing."""

from bert_tf._deprecated import resolver

MOVED = {"bert_tf.tasks": {"Task": "bert_tf.training.task:Task"}}
moved = resolver(MOVED)
