"""The old names of `bert_tf.export` (see `bert_tf._deprecated`): the fine-tuned models' exports,
which moved to their tasks' folders (`bert_tf.tasks.<kind>.export`) and took their kinds' names.
They point up the layers, so they are imported only when an old name is used."""

from bert_tf._deprecated import resolver

MOVED = {
    "bert_tf.export": {
        "export_classifier": "bert_tf.tasks.classifier.export:export_classifier",
        "export_multiple_choice": "bert_tf.tasks.swag.export:export_swag",
        "export_span_labeler": "bert_tf.tasks.squad.export:export_squad",
        "export_token_classifier": "bert_tf.tasks.ner.export:export_ner",
    },
}
moved = resolver(MOVED)
