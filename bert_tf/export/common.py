"""What every export shares: the root object's variables, its assets, float32 outputs whatever
the model's compute dtype, and how a text-in signature runs its model (`ServingOptions`: the
request's length, XLA, int8 weights, bfloat16 compute). The in-graph text preprocessing is
`bert_tf.preprocessing.text_preprocessing`."""

import dataclasses

import tensorflow as tf

from bert_tf.data.lengths import cut_padding
from bert_tf.models.bert_encoder import INPUT_NAMES, padding_skipped
from bert_tf.training.settings import (
    FROZEN_WEIGHTS_ENV,  # noqa: F401 - here too: a serving process's setting (model_runner)
    SKIP_PADDING_WITHOUT_XLA,
    check_length_bucket,
    default_length_bucket,
)

QUANTIZE_MODES = ("int8",)
MIXED_PRECISION = {"bf16": "bfloat16"}  # ServingOptions.mixed_precision -> the copy's Keras dtype policy
LAYOUT_ROWS = (7, 80)  # oneDNN's weight layout for 7 to 80 rows, another for other counts (model_runner)
AUTO = "auto"  # ServingOptions.length_bucket: the default for its XLA choice


@dataclasses.dataclass(frozen=True)
class ServingOptions:
    """How a text-in export runs its model on a request.

    length_bucket: the packed inputs are cut to the request's longest sequence rounded up to a
      multiple of this (`bert_tf.data.lengths`), at most the export's seq_length; None packs every
      request to seq_length, as the original's fixed shapes. The outputs on the real tokens are
      the same either way: attention masks the padding. AUTO (the default): as the training
      loop's, `bert_tf.training.settings.default_length_bucket(jit_compile)`: 8 with XLA, which
      compiles a program per shape; 1 (the request's exact longest, as ONNX Runtime and PyTorch
      are fed) without it, where shapes cost nothing (bench/serving.py, BERT-Base on 2 cores,
      without XLA: 1 against 16 took batch-32 throughput from 64.1 to 90.8 sequences/s). Resolved
      once, when the options are made: `dataclasses.replace` of a made one keeps its bucket.
    jit_compile: the model part of the serving function is XLA-compiled (once per shape: each
      batch size with each of the seq_length / length_bucket lengths). None: the library's
      built-in rule, the same on every machine: on exactly with int8 weights (BERT-Base, 2
      AVX-512 cores: the int8 model 4x faster with it, 46 against 179 ms at batch 1, Keras' int8
      matmul being slow outside XLA). Whether XLA helps float weights differs between machines
      (bench/serving.py on that machine: first slower, 71 against 58 ms, later as fast or faster),
      so export_saved_model.py passes a resolved value instead: this machine's measured choice
      (`bert_tf.training.speed.choose_serving_jit_compile`, saved by `python bench/serving.py
      --save_defaults`).
    quantize: "int8" stores the Dense layers' kernels as int8 with a scale per output column and
      quantizes their inputs per row on the fly (Keras' `Model.quantize("int8")`); None keeps
      float weights. As with bfloat16, a text's probabilities may differ between a request of its
      own and a batch: float32's last-bit differences between the two (1e-7) can move an input
      across an int8 rounding step, 1/127 of its row's largest value (a 4-layer, hidden-256 model:
      up to 3.9e-4; bench/serving_accuracy.py measures it).
    skip_padding: a request with padding (a batch of texts of different lengths) runs the
      encoder's layers (all but attention's scores) on its real tokens alone
      (`bert_tf.models.padding_skipped`): the work follows the tokens, not the batch's longest
      row; outputs on real tokens are the same, those on padding positions (a token-level
      output's rows past a text's end) are the model's on zero vectors. A request without padding
      runs the plain graph. AUTO (the default): on without XLA where the request's length is
      used (not with fixed shapes: those are the original's graph); XLA cannot take it (a shape
      that depends on the data).
    mixed_precision: "bf16" runs the model on bfloat16 weights: the export holds a copy of the
      model built from its config in Keras' "bfloat16" dtype policy (`in_precision`), so its
      Dense kernels, embeddings and biases are bfloat16 variables (half the bytes to store and
      for each product to read) and its products, GELU and residual sums run in bfloat16, while
      the layers that always compute in float32 stay so (the LayerNorms, the attention's softmax,
      the heads' last products) and the outputs are float32. A precision change, as int8 is: the
      probabilities move by about 1e-3 (bench/serving_accuracy.py measures a fine-tuned task's),
      and a text's may differ by as much between a request of its own and a batch (the plain and
      the padding-skipped graph round in different places), where float32's agree within 1e-7.
      Fastest on CPUs with bfloat16 instructions (AVX512_BF16, AMX), above all in a process that
      keeps oneDNN's weight layouts (FROZEN_WEIGHTS_ENV, see `model_runner`): bench/serving.py,
      BERT-Base text in on 2 AVX-512 cores with AVX512_BF16, README "Speed on real text". Where
      oneDNN emulates bfloat16 (no such instructions) it is slower: measure before serving it.
      None (the default): float32 throughout. Not with int8 weights.
    """

    length_bucket: int | None | str = AUTO
    jit_compile: bool | None = None
    quantize: str | None = None
    skip_padding: bool | str = AUTO
    mixed_precision: str | None = None

    def __post_init__(self):
        if self.jit_compile is None:  # frozen: the defaults resolved once, here
            object.__setattr__(self, "jit_compile", self.quantize is not None)
        if self.length_bucket == AUTO:
            object.__setattr__(self, "length_bucket", default_length_bucket(self.jit_compile))
        if self.length_bucket is not None:
            check_length_bucket(self.length_bucket)
        if self.quantize is not None and self.quantize not in QUANTIZE_MODES:
            raise ValueError(f"quantize={self.quantize!r} is not one of {', '.join(QUANTIZE_MODES)}")
        if self.skip_padding == AUTO:
            object.__setattr__(self, "skip_padding", not self.jit_compile and self.length_bucket is not None)
        elif self.skip_padding and self.jit_compile:
            raise ValueError(f"skip_padding=True needs jit_compile=False: {SKIP_PADDING_WITHOUT_XLA}")
        if self.mixed_precision is not None and self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"mixed_precision={self.mixed_precision!r} is not one of {', '.join(MIXED_PRECISION)}")
        if self.mixed_precision and self.quantize:
            raise ValueError(f"mixed_precision={self.mixed_precision} is for float weights, not quantize="
                             f"{self.quantize}: the int8 kernels take their inputs in float32")

    def to_dict(self):
        return dataclasses.asdict(self)


DEFAULT_SERVING = ServingOptions()  # the request's exact length, no XLA, float weights


def quantize_dense_layers(model, mode):
    """Quantizes `model`'s Dense layers in place (Keras' `Model.quantize(mode)`); the embeddings
    stay float: a lookup gains no speed from int8."""
    import keras

    model.quantize(mode, filters=lambda layer: isinstance(layer, keras.layers.Dense))


def in_precision(model, mixed_precision):
    """`model` itself, or (`mixed_precision` set: ServingOptions.mixed_precision) a copy of it
    built from its config in that Keras dtype policy, holding its weights: the model Keras builds
    under that global policy, whose layers that always compute in float32 (the LayerNorms, the
    heads' last products) stay so, as switching every layer's policy would not."""
    if not mixed_precision:
        return model
    import keras

    name = MIXED_PRECISION[mixed_precision]
    policy = keras.dtype_policies.serialize(keras.dtype_policies.get(name))

    def replaced(config):  # every "dtype" of the config: the model's and its parts' constructor arguments
        if isinstance(config, list):
            return [replaced(value) for value in config]
        if not isinstance(config, dict):
            return config
        return {key: policy if key == "dtype" and isinstance(value, dict) and value.get("class_name") == "DTypePolicy"
                else replaced(value) for key, value in config.items()}

    try:
        copy = type(model).from_config(replaced(model.get_config()))
    except Exception as e:  # noqa: BLE001 - a layer that cannot be made in that dtype, e.g. an LSTM's initializer
        reason = str(e).strip().splitlines()[0]
        raise ValueError(f"mixed_precision={mixed_precision}: a {type(model).__name__} cannot be built in Keras' "
                         f"{name} policy ({type(e).__name__}: {reason})") from e
    copy.set_weights(model.get_weights())
    return copy


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
        raise ValueError(f"seq_length {seq_length} leaves no room for [CLS] A [SEP] B [SEP]")


def write_text_in_export(model, make_root, vocab_file, do_lower_case, seq_length, export_dir, task=None,
                         overwrite=False, serving=DEFAULT_SERVING):
    """What every task export does around its own serving function: checks `seq_length` against
    `model`'s config, quantizes `model` in place when `serving.quantize` says so (or copies it
    into `serving.mixed_precision`: `in_precision`), builds the in-graph tokenizer and packer,
    makes the root object with `make_root(model, tokenizer, packer, run_model)` (that model;
    `run_model = model_runner(model, serving)`; the root's `__call__` becomes `serving_default`),
    attaches the assets (vocab, casing, config, the run record `task`, the serving options with
    seq_length as `serving_file`) and writes it atomically. Returns `export_dir`."""
    from bert_tf.export.archive import ExportWriter
    from bert_tf.preprocessing import text_preprocessing

    config = model.encoder.bert_config()
    check_seq_length(seq_length, config)
    tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, seq_length, config.vocab_size)
    if serving.quantize:
        quantize_dense_layers(model, serving.quantize)
    model = in_precision(model, serving.mixed_precision)
    with ExportWriter(export_dir, overwrite) as writer:
        root = make_root(model, tokenizer, packer, model_runner(model, serving))
        root.attach_assets(writer, vocab_file, do_lower_case, config, task)
        root.serving_file = writer.asset_json({"seq_length": seq_length, **serving.to_dict()}, "serving.json")
        writer.save(root, {"serving_default": root.__call__})
    return export_dir
