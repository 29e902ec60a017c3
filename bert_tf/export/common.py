"""What every export shares: the root object's variables, its assets, float32 outputs whatever
the model's compute dtype, and how a text-in signature runs its model as its `ServingOptions` say
(`model_runner`: the request's length, XLA, padding skipped; `write_text_in_export`: the weights'
format). The options and the rules that pick them are `bert_tf.export.serving`'s; the in-graph
text preprocessing is `bert_tf.preprocessing.text_preprocessing`."""

import tensorflow as tf

from bert_tf.data.lengths import cut_padding
from bert_tf.errors import shown

# The serving options and their rules live in bert_tf.export.serving; kept importable from here.
from bert_tf.export.serving import (  # noqa: F401
    AUTO,
    DEFAULT_SERVING,
    MIXED_PRECISION,
    QUANTIZE_MODES,
    ServingOptions,
    in_precision,
    quantize_dense_layers,
)
from bert_tf.models.bert_encoder import INPUT_NAMES, padding_skipped
from bert_tf.training.settings import (  # noqa: F401 - kept importable from here
    FROZEN_WEIGHTS_ENV,  # here too: a serving process's setting (model_runner)
    SKIP_PADDING_WITHOUT_XLA,
    check_length_bucket,
    default_length_bucket,
)

LAYOUT_ROWS = (7, 80)  # oneDNN's weight layout for 7 to 80 rows, another for other counts (model_runner)


def model_runner(model, options, seq_axis_keys=INPUT_NAMES):
    """`run(inputs)`: `model(inputs, training=False)` on the packed `inputs` (a dict of int32
    `[..., seq_length]` tensors) cut to the request's bucketed length when `options.length_bucket`
    is set, XLA-compiled when `options.jit_compile`, skipping a request's padding when
    `options.skip_padding`. Outputs that follow the sequence axis come out as long as the cut
    inputs.

    Without XLA, the model's graph is there twice for each way of running it (plain, padding
    skipped): one copy for requests whose products take LAYOUT_ROWS rows, one for the others
    (`_routed_by_rows`). That costs nothing where each call re-packs the weights for oneDNN, as
    TensorFlow does by default; but a serving process started with the environment variable
    FROZEN_WEIGHTS_ENV=1 (TensorFlow's: oneDNN then takes every product's weights as constant)
    lays each product's weights out once, on its first call, and keeps that layout, and oneDNN's
    inner product picks one layout for 7 to 80 rows and another for other counts (oneDNN 3.7 on
    AVX-512, on both machines measured; `bench/matmul_rows.py`): in one copy a first batch would
    leave every later one-text call re-laying the weights, 2x slower than not keeping them. With
    the copies, each keeps its own for the products over its token rows, and one text at batch 1
    runs faster (bench/serving.py, BERT-Base on 2 AVX-512 cores, README "Speed on real text"). The
    products that take one row per text (the last layer's on the [CLS] rows, the pooler, the
    head) follow the batch size instead, and the last layer's key and value products the padded
    rows: a service whose batch sizes straddle 7 re-lays those few weights on the calls of the
    other class (a service of one text per request never does). The variable is a process's
    promise that no weight changes (TensorFlow reads it once; set it before TensorFlow starts):
    only in a process that serves, never in one that trains (`Trainer.train` and the training
    scripts refuse to: `bert_tf.training.settings.check_weights_may_change`), and only for graphs
    whose products all multiply by weights, as these exports' do."""

    def call(inputs):
        return model(inputs, training=False)

    if options.jit_compile:
        # A nested tf.function keeps its compile attribute in the SavedModel: a loaded export
        # compiles it per input shape without this package.
        call = tf.function(call, jit_compile=True, autograph=False)
    elif options.skip_padding:
        call = _padding_skipped_when_any(model, call)
    else:
        call = _routed_by_rows(call, _packed_rows)

    def run(inputs):
        return call(cut_padding(inputs, options.length_bucket, seq_axis_keys))

    return run


def _padding_skipped_when_any(model, call):
    """`call` with the padding skipped when `inputs` has any; without, the plain graph (skipping
    gathers and scatters every layer's rows for nothing there: one text at its exact length).
    Each routed by the rows its products take (`_routed_by_rows`): all the packed inputs' rows in
    the plain graph, the real tokens alone where the padding is skipped."""

    def skipping(inputs):
        with padding_skipped(model):  # the graph is traced here: it keeps skipping
            return call(inputs)

    plain, skipped = _routed_by_rows(call, _packed_rows), _routed_by_rows(skipping, _real_tokens)

    def run(inputs):
        no_padding = tf.reduce_all(tf.not_equal(inputs["input_mask"], 0))
        return tf.cond(no_padding, lambda: plain(inputs), lambda: skipped(inputs))

    return run


def _packed_rows(inputs):
    """The rows a plain graph's products take: every packed position of the request."""
    return tf.size(inputs["input_mask"])


def _real_tokens(inputs):
    """The rows a padding-skipping graph's products take: the request's real tokens."""
    return tf.math.count_nonzero(inputs["input_mask"], dtype=tf.int32)


def _routed_by_rows(call, rows_of):
    """`call` through two copies of its graph, each a function of its own (its own kernels, so
    its own kept layouts; `model_runner`): one for requests whose products take LAYOUT_ROWS rows
    (`rows_of(inputs)`), one for the others."""
    few_rows, other_rows = (tf.function(call, autograph=False) for _ in range(2))

    def run(inputs):
        rows = rows_of(inputs)
        low, high = LAYOUT_ROWS
        return tf.cond(tf.logical_and(rows >= low, rows <= high), lambda: few_rows(inputs), lambda: other_rows(inputs))

    return run


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
        raise ValueError(f"{shown.seq_length} {seq_length} leaves no room for [CLS] A [SEP] B [SEP]")


def write_text_in_export(model, make_root, vocab_file, do_lower_case, seq_length, export_dir, task=None,
                         overwrite=False, serving=DEFAULT_SERVING):
    """What every task export does around its own serving function: checks `seq_length` against
    `model`'s config, turns `model` into the format `serving` asks for (`ServingFormat.prepared`:
    int8 quantizes it in place, bf16 copies it), builds the in-graph tokenizer and packer,
    makes the root object with `make_root(model, tokenizer, packer, run_model)` (that model;
    `run_model = model_runner(model, serving)`; the root's `__call__` becomes `serving_default`),
    attaches the assets (vocab, casing, config, the run record `task`, the serving options with
    seq_length as `serving_file`) and writes it atomically. Returns `export_dir`."""
    from bert_tf.export.archive import ExportWriter
    from bert_tf.preprocessing import text_preprocessing

    config = model.encoder.bert_config()
    check_seq_length(seq_length, config)
    tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, seq_length, config.vocab_size)
    model = serving.format.prepared(model)
    with ExportWriter(export_dir, overwrite) as writer:
        root = make_root(model, tokenizer, packer, model_runner(model, serving))
        root.attach_assets(writer, vocab_file, do_lower_case, config, task)
        root.serving_file = writer.asset_json({"seq_length": seq_length, **serving.to_dict()}, "serving.json")
        writer.save(root, {"serving_default": root.__call__})
    return export_dir
