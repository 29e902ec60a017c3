"""The old names of `bert_tf.training`'s modules (see `bert_tf._deprecated`): pre-training
re-exported the loop's gradient clipping norm, which lives in `bert_tf.training.trainer`."""

from bert_tf._deprecated import resolver

MOVED = {"bert_tf.training.pretraining": {"CLIP_NORM": "bert_tf.training.trainer:CLIP_NORM"}}
moved = resolver(MOVED)
