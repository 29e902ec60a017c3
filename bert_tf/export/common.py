"""What every export shares: the root object's variables, its assets, and float32 outputs
whatever the model's compute dtype (the in-graph text preprocessing is
`bert_tf.preprocessing.text_preprocessing`)."""

import tensorflow as tf


class SavedModelRoot(tf.train.Checkpoint):
    """The root object of an export, holding `model`'s variables as TF Hub's Reusable SavedModel
    API names them: `variables` (all, the dropout seeds' state included: every variable a
    function reads must be reachable from the root), `trainable_variables` and an empty
    `regularization_losses` (the original adds no regularizer to the loss)."""

    def __init__(self, model=None):
        super().__init__()
        self.variables = list(model.variables) if model is not None else []
        self.trainable_variables = list(model.trainable_variables) if model is not None else []
        self.regularization_losses = []

    def attach_assets(self, writer, vocab_file=None, do_lower_case=None, bert_config=None, task=None):
        """Adds the files that say what the export holds: `vocab_file` (vocab.txt) and
        `do_lower_case` (a bool variable, outside `variables`), as TF Hub's BERT encoders carry
        them; `bert_config_file` (bert_config.json); `task_file` (fine_tuning_task.json)."""
        if vocab_file is not None:
            self.vocab_file = writer.asset_copy(vocab_file, "vocab.txt")
        if do_lower_case is not None:
            self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
        if bert_config is not None:
            self.bert_config_file = writer.asset_json(bert_config.to_dict(), "bert_config.json")
        if task is not None:
            self.task_file = writer.asset_json(task, "fine_tuning_task.json")


def as_float32(tensor):
    """A mixed-precision model's float16/bfloat16 output as float32 (integers stay)."""
    return tf.cast(tensor, tf.float32) if tensor.dtype.is_floating else tensor


def string_spec(name, shape=(None,)):
    return tf.TensorSpec(shape, tf.string, name=name)


def check_seq_length(seq_length, bert_config):
    """seq_length must fit the model's position embeddings (and hold [CLS] A [SEP] B [SEP])."""
    bert_config.check_seq_length(seq_length)
    if seq_length < 3:
        raise ValueError(f"seq_length {seq_length} leaves no room for [CLS] A [SEP] B [SEP]")


def write_text_in_export(model, make_root, vocab_file, do_lower_case, seq_length, export_dir, task=None,
                         overwrite=False):
    """What every task export does around its own serving function: checks `seq_length` against
    `model`'s config, builds the in-graph tokenizer and packer, makes the root object with
    `make_root(tokenizer, packer)` (its `__call__` becomes `serving_default`), attaches the
    assets (vocab, casing, config, the run record `task`) and writes it atomically. Returns
    `export_dir`."""
    from bert_tf.export.archive import ExportWriter
    from bert_tf.preprocessing import text_preprocessing

    config = model.encoder.bert_config()
    check_seq_length(seq_length, config)
    tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, seq_length, config.vocab_size)
    with ExportWriter(export_dir, overwrite) as writer:
        root = make_root(tokenizer, packer)
        root.attach_assets(writer, vocab_file, do_lower_case, config, task)
        writer.save(root, {"serving_default": root.__call__})
    return export_dir
