"""How a text-in export runs its model, and every rule that picks it: `ServingOptions` (the
request's length bucket, padding skipped, XLA, the format of the weights) and its defaults, the
formats an export can hold its weights in (FORMATS: float32, int8, bf16), the serving function's
XLA choice on the machine at hand (`choose_serving_jit_compile`), and which options an export
type takes. `bert_tf.export.common.model_runner` runs a model as the options say, and
`write_text_in_export` turns it into its format first (`ServingFormat.prepared`).

A format is one entry of FORMATS: the ServingOptions setting that asks for it and its value (the
setting's values are export_saved_model.py's flag of that name), how it turns the model into the
one the export holds, its XLA default and its words in the script's log line.
"""

import dataclasses
from collections.abc import Callable

from bert_tf.data import lengths
from bert_tf.errors import shown
from bert_tf.training import speed
from bert_tf.training.settings import SKIP_PADDING_WITHOUT_XLA, default_length_bucket

AUTO = "auto"  # ServingOptions.length_bucket and skip_padding: the default for its XLA choice
# Why int8 exports serve through XLA on every machine (bench/serving.py, BERT-Base on 2 AVX-512
# cores: 46 against 179 ms at batch 1 with it).
INT8_SOURCE = "on with int8 weights (Keras' int8 matmul is about 4x slower outside XLA)"


@dataclasses.dataclass(frozen=True)
class ServingFormat:
    """One way a text-in export holds its weights and computes with them: an entry of FORMATS.

    name: the format's name (bench/serving_accuracy.py's for its export).
    setting, value: the ServingOptions field that asks for the format, and its value there; None
      for float32, which neither asks for.
    prepare: `prepare(model, value)` -> the model the export holds (`model` changed in place, or a
      copy); None: `model` as it is.
    jit_compile: the serving function's XLA where none is given: True or False on every machine
      (`jit_source` says why); None: the machine's measured choice (`choose_serving_jit_compile`).
    jit_source: why, for the script's log line; None: the setting that asks for the format.
    words: the format in the script's line on what it exported; None: nothing to add (float32).
    keras_policy: the Keras dtype policy of a mixed-precision copy (`in_precision`).
    """

    name: str
    setting: str | None = None
    value: str | None = None
    prepare: Callable | None = None
    jit_compile: bool | None = None
    jit_source: str | None = None
    words: str | None = None
    keras_policy: str | None = None

    @property
    def options(self):
        """The ServingOptions arguments that ask for this format."""
        return {self.setting: self.value} if self.setting else {}

    def prepared(self, model):
        """The model the export holds: `prepare(model, value)`, else `model`."""
        return model if self.prepare is None else self.prepare(model, self.value)

    def xla_source(self):
        """Why its XLA default (`jit_compile`) holds, in the script's log line."""
        return self.jit_source or f"{shown(self.setting)}={self.value}"


def quantize_dense_layers(model, mode):
    """Quantizes `model`'s Dense layers in place (Keras' `Model.quantize(mode)`) and returns it; the
    embeddings stay float: a lookup gains no speed from int8."""
    import gc

    import keras

    # Keras runs a full garbage collection for each float kernel it replaces: over a process
    # holding TensorFlow, about 0.3 s each. Frozen, what exists already is skipped by them.
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        model.quantize(mode, filters=lambda layer: isinstance(layer, keras.layers.Dense))
    finally:
        if not frozen_before:  # a process that froze objects itself keeps them frozen
            gc.unfreeze()
    return model


def in_precision(model, mixed_precision):
    """`model` itself, or (`mixed_precision` set: ServingOptions.mixed_precision) a copy of it
    built from its config in that Keras dtype policy, holding its weights: the model Keras builds
    under that global policy, whose layers that always compute in float32 (the LayerNorms, the
    heads' last products) stay so, as switching every layer's policy would not."""
    if not mixed_precision:
        return model
    import keras

    name = _values("mixed_precision")[mixed_precision].keras_policy
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
        raise ValueError(f"{shown.mixed_precision}={mixed_precision}: a {type(model).__name__} cannot be built "
                         f"in Keras' "
                         f"{name} policy ({type(e).__name__}: {reason})") from e
    copy.set_weights(model.get_weights())
    return copy


FORMATS = {entry.name: entry for entry in (
    ServingFormat("float32"),
    # Dense kernels stored as int8 with a scale per output column, their inputs quantized per row
    # on the fly; served through XLA (INT8_SOURCE).
    ServingFormat("int8", "quantize", "int8", prepare=quantize_dense_layers, jit_compile=True,
                  jit_source=INT8_SOURCE, words="int8 Dense weights"),
    # A copy of the model in bfloat16 (`in_precision`); XLA off unless given: measured without it.
    ServingFormat("bf16", "mixed_precision", "bf16", prepare=in_precision, jit_compile=False,
                  words="bfloat16 weights and products", keras_policy="bfloat16"),
)}
FORMAT_SETTINGS = tuple(dict.fromkeys(entry.setting for entry in FORMATS.values() if entry.setting))
# Each setting's values, as the script's flags offer them.
QUANTIZE_MODES = tuple(entry.value for entry in FORMATS.values() if entry.setting == "quantize")
MIXED_PRECISION = {entry.value: entry.keras_policy for entry in FORMATS.values() if entry.setting == "mixed_precision"}


def formats_asked(setting_of):
    """The entries of FORMATS that the settings ask for (`setting_of(name)`: a setting's value);
    unknown values ask for none."""
    return [entry for entry in FORMATS.values() if entry.setting and setting_of(entry.setting) == entry.value]


def _values(setting):
    """{value: entry of FORMATS} of the ServingOptions field `setting`."""
    return {entry.value: entry for entry in FORMATS.values() if entry.setting == setting}


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
      batch size with each of the seq_length / length_bucket lengths). None: the format's built-in
      rule, the same on every machine: on exactly with int8 weights (BERT-Base, 2 AVX-512 cores:
      the int8 model 4x faster with it, 46 against 179 ms at batch 1, Keras' int8 matmul being
      slow outside XLA). Whether XLA helps float weights differs between machines
      (bench/serving.py on that machine: first slower, 71 against 58 ms, later as fast or faster),
      so export_saved_model.py passes a resolved value instead: this machine's measured choice
      (`choose_serving_jit_compile`, saved by `python bench/serving.py --save_defaults`).
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
      keeps oneDNN's weight layouts (FROZEN_WEIGHTS_ENV, see `bert_tf.export.common.model_runner`):
      bench/serving.py, BERT-Base text in on 2 AVX-512 cores with AVX512_BF16, README "Speed on
      real text". Where oneDNN emulates bfloat16 (no such instructions) it is slower: measure
      before serving it. None (the default): float32 throughout. Not with int8 weights.

    quantize and mixed_precision name the format (`format`, an entry of FORMATS), which says what
    values they take.
    """

    length_bucket: int | None | str = AUTO
    jit_compile: bool | None = None
    quantize: str | None = None
    skip_padding: bool | str = AUTO
    mixed_precision: str | None = None

    def __post_init__(self):
        if self.jit_compile is None:  # frozen: the defaults resolved once, here
            asked = formats_asked(lambda setting: getattr(self, setting))
            object.__setattr__(self, "jit_compile", any(entry.jit_compile for entry in asked))
        if self.length_bucket == AUTO:
            object.__setattr__(self, "length_bucket", default_length_bucket(self.jit_compile))
        if self.length_bucket is not None:
            lengths.check_length_bucket(self.length_bucket)
        for setting in FORMAT_SETTINGS:  # each setting takes the values of its formats
            value, known = getattr(self, setting), _values(setting)
            if value is not None and value not in known:
                raise ValueError(f"{shown(setting)}={value!r} is not one of {', '.join(known)}")
        if self.mixed_precision and self.quantize:
            raise ValueError(f"{shown.mixed_precision}={self.mixed_precision} is for float weights, not "
                             f"{shown.quantize}="
                             f"{self.quantize}: the {self.quantize} kernels take their inputs in float32")
        if self.skip_padding == AUTO:
            object.__setattr__(self, "skip_padding", not self.jit_compile and self.length_bucket is not None)
        elif self.skip_padding and self.jit_compile:
            raise ValueError(f"{shown.skip_padding}=True needs {shown.jit_compile}=False: {SKIP_PADDING_WITHOUT_XLA}")

    @classmethod
    def given(cls, length_bucket=None, pad_to_max_seq_length=False, jit_compile=None, quantize=None,
              skip_padding=None, mixed_precision=None):
        """The options of settings given or left unset (None: the default, as a script's unset
        flag): every request padded to seq_length with `pad_to_max_seq_length`, else to its
        length rounded up to `length_bucket` (unset: AUTO); padding skipped unless
        `skip_padding` says (unset: AUTO)."""
        bucket = None if pad_to_max_seq_length else (AUTO if length_bucket is None else length_bucket)
        skip_padding = AUTO if skip_padding is None else skip_padding
        return cls(bucket, jit_compile, quantize, skip_padding, mixed_precision)

    @property
    def format(self):
        """The entry of FORMATS that these options serve."""
        asked = formats_asked(lambda setting: getattr(self, setting))
        return asked[0] if asked else FORMATS["float32"]

    def to_dict(self):
        return dataclasses.asdict(self)

    def without_model(self, export_type, task_kinds):
        """These options for an export that runs no model per request (`export_type`, not one of
        the text-in `task_kinds`): its length bucket alone. A ValueError naming the first option
        of a model run per request (MODEL_SETTINGS) that is set."""
        for name in MODEL_SETTINGS:
            if getattr(self, name):
                raise ValueError(f"{shown(name)}={getattr(self, name)} is for the task exports "
                                 f"({', '.join(task_kinds)}), "
                                 f"not export_type={export_type}")
        return dataclasses.replace(self, skip_padding=False)

    def describe(self):
        """These options in words, for the script's line on what it exported."""
        bucket = self.length_bucket
        parts = ["fixed length" if bucket is None else "the request's exact length" if bucket == 1
                 else f"length buckets of {bucket}"]
        if self.skip_padding:
            parts.append("padding skipped")
        if self.jit_compile:
            parts.append("XLA")
        if self.format.words:
            parts.append(self.format.words)
        return ", ".join(parts)


DEFAULT_SERVING = ServingOptions()  # the request's exact length, no XLA, float weights
# The options of a model run per request, in the order `ServingOptions.without_model` names one.
MODEL_SETTINGS = ("quantize", "jit_compile", "mixed_precision")


def choose_serving_jit_compile(jit_compile, quantize, path=None, measured_without=(), mixed_precision=None):
    """A JitChoice (`bert_tf.training.speed`) for a text-in export's serving function:
    `jit_compile` as given; unset, the XLA default of the format that `quantize` and
    `mixed_precision` ask for (FORMATS: int8 on, INT8_SOURCE says why; bf16 off, measured without
    it, the source naming the setting); off where float weights come with options measured
    without XLA (`measured_without`: their names, the choice's source; XLA takes other kernels
    than those options were measured on, and the speed file is then not read); else the choice
    of `choose_jit_compile` for "serving_jit_compile" (GPU: on; CPU: this machine's measured
    choice, else off). The platform is the exporting process's: an export is taken to serve
    where it is made."""
    if jit_compile is None:
        asked = formats_asked({"quantize": quantize, "mixed_precision": mixed_precision}.get)
        on = [entry for entry in asked if entry.jit_compile]
        if on:
            return speed.JitChoice(True, on[0].xla_source(), None)
        off = [*measured_without, *(entry.xla_source() for entry in asked if entry.jit_compile is False)]
        if off:
            return speed.JitChoice(False, " ".join(off), None)
    return speed.choose_jit_compile(jit_compile, path=path, name="serving_jit_compile")


def check_length_bucket(length_bucket, pad_to_max_seq_length, seq_length):
    """A `length_bucket` given for an export must be used: not with `pad_to_max_seq_length` (every
    request padded to seq_length), nor above `seq_length` (the export's, once `read` resolved it;
    None: an export that packs nothing), which no request reaches. A ValueError naming the
    settings otherwise."""
    if length_bucket is None:
        return
    if pad_to_max_seq_length:
        raise ValueError(f"{shown.length_bucket}={length_bucket} has no use with {shown.pad_to_max_seq_length} "
                         f"(every request is "
                         f"padded to {shown.seq_length}): give one of them")
    if seq_length is not None and length_bucket > seq_length:
        raise ValueError(f"{shown.length_bucket}={length_bucket} is above the export's sequence length {seq_length} "
                         f"({shown.seq_length}, default the run's {shown.max_seq_length}): no request is "
                         f"longer; give at most that")
