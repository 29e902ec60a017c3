"""What every export shares: the root object's variables, its assets, float32 outputs whatever
the model's compute dtype, and how a text-in signature runs its model (`ServingOptions`: the
request's length, XLA, int8 weights). The in-graph text preprocessing is
`bert_tf.preprocessing.text_preprocessing`."""

import dataclasses

import tensorflow as tf

from bert_tf.data.lengths import cut_padding
from bert_tf.models.bert_encoder import INPUT_NAMES, padding_skipped
from bert_tf.training.settings import SKIP_PADDING_WITHOUT_XLA, check_length_bucket, default_length_bucket

QUANTIZE_MODES = ("int8",)
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
      float weights.
    skip_padding: a request with padding (a batch of texts of different lengths) runs the
      encoder's layers (all but attention's scores) on its real tokens alone
      (`bert_tf.models.padding_skipped`): the work follows the tokens, not the batch's longest
      row; outputs on real tokens are the same, those on padding positions (a token-level
      output's rows past a text's end) are the model's on zero vectors. A request without padding
      runs the plain graph. AUTO (the default): on without XLA where the request's length is
      used (not with fixed shapes: those are the original's graph); XLA cannot take it (a shape
      that depends on the data).
    """

    length_bucket: int | None | str = AUTO
    jit_compile: bool | None = None
    quantize: str | None = None
    skip_padding: bool | str = AUTO

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

    def to_dict(self):
        return dataclasses.asdict(self)


DEFAULT_SERVING = ServingOptions()  # the request's exact length, no XLA, float weights


def quantize_dense_layers(model, mode):
    """Quantizes `model`'s Dense layers in place (Keras' `Model.quantize(mode)`); the embeddings
    stay float: a lookup gains no speed from int8."""
    import keras

    model.quantize(mode, filters=lambda layer: isinstance(layer, keras.layers.Dense))


def model_runner(model, options, seq_axis_keys=INPUT_NAMES):
    """`run(inputs)`: `model(inputs, training=False)` on the packed `inputs` (a dict of int32
    `[..., seq_length]` tensors) cut to the request's bucketed length when `options.length_bucket`
    is set, XLA-compiled when `options.jit_compile`, skipping a request's padding when
    `options.skip_padding`. Outputs that follow the sequence axis come out as long as the cut
    inputs."""

    def call(inputs):
        return model(inputs, training=False)

    if options.jit_compile:
        # A nested tf.function keeps its compile attribute in the SavedModel: a loaded export
        # compiles it per input shape without this package.
        call = tf.function(call, jit_compile=True, autograph=False)
    elif options.skip_padding:
        call = _padding_skipped_when_any(model, call)

    def run(inputs):
        return call(cut_padding(inputs, options.length_bucket, seq_axis_keys))

    return run


def _padding_skipped_when_any(model, call):
    """`call` with the padding skipped when `inputs` has any; without, the plain graph (skipping
    gathers and scatters every layer's rows for nothing there: one text at its exact length)."""

    def skipped(inputs):
        with padding_skipped(model):  # the graph is traced here: it keeps skipping
            return call(inputs)

    def run(inputs):
        no_padding = tf.reduce_all(tf.not_equal(inputs["input_mask"], 0))
        return tf.cond(no_padding, lambda: call(inputs), lambda: skipped(inputs))

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
    `model`'s config, quantizes `model` in place when `serving.quantize` says so, builds the
    in-graph tokenizer and packer, makes the root object with `make_root(tokenizer, packer,
    run_model)` (`run_model = model_runner(model, serving)`; the root's `__call__` becomes
    `serving_default`), attaches the assets (vocab, casing, config, the run record `task`, the
    serving options with seq_length as `serving_file`) and writes it atomically. Returns
    `export_dir`."""
    from bert_tf.export.archive import ExportWriter
    from bert_tf.preprocessing import text_preprocessing

    config = model.encoder.bert_config()
    check_seq_length(seq_length, config)
    tokenizer, packer = text_preprocessing(vocab_file, do_lower_case, seq_length, config.vocab_size)
    if serving.quantize:
        quantize_dense_layers(model, serving.quantize)
    with ExportWriter(export_dir, overwrite) as writer:
        root = make_root(tokenizer, packer, model_runner(model, serving))
        root.attach_assets(writer, vocab_file, do_lower_case, config, task)
        root.serving_file = writer.asset_json({"seq_length": seq_length, **serving.to_dict()}, "serving.json")
        writer.save(root, {"serving_default": root.__call__})
    return export_dir
