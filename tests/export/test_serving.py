"""Text-in exports serve at the request's length: every task's signature (and the preprocessor's
default call) gives the outputs of today's fixed-length export within 1e-5, its model run on the
longest sequence rounded up to the bucket; the XLA and int8 options serve from a loaded
SavedModel and record themselves in serving.json."""

import collections
import itertools
import json
import os
import re
import subprocess
import sys
import types

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from bert_tf import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)
from bert_tf.export import common, exports, serving
from bert_tf.export.common import FROZEN_WEIGHTS_ENV, LAYOUT_ROWS, model_runner
from bert_tf.export.preprocessor import PreprocessorSavedModel
from bert_tf.export.serving import FORMATS, ServingFormat, ServingOptions, choose_serving_jit_compile, in_precision
from bert_tf.preprocessing import text_preprocessing
from bert_tf.tasks.classifier.export import ClassifierSavedModel, export_classifier
from bert_tf.tasks.embedder.export import EmbedderSavedModel
from bert_tf.tasks.ner.export import TokenClassifierSavedModel
from bert_tf.tasks.squad.export import SpanLabelerSavedModel
from bert_tf.tasks.swag.export import MultipleChoiceSavedModel
from bert_tf.tokenization import FullTokenizer
from tests.tiny import VOCAB, tiny_config, write_vocab

SEQ, BUCKET = 24, 4  # tiny_config's max_position_embeddings; a bucket small enough to cut often
LABELS, TAGS = ["x", "y", "z"], ["O", "B-X", "I-X"]
WORDS = [w for w in VOCAB[5:] if not w.startswith("##")] + ["runs", "unwanted"]


def _texts(n, seed, low, high):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(low, high))) for _ in range(n)]


def _scrambled(model, seed):
    """Weights far from the initializer's, so that a difference in the outputs shows."""
    rng = np.random.default_rng(seed)
    for v in model.trainable_variables:
        gamma = "gamma" in v.path
        v.assign((float(gamma) + (0.2 if gamma else 0.3) * rng.standard_normal(v.shape)).astype(np.float32))
    return model


def _bucketed(longest):
    """The rule, restated: the longest row rounded up to a multiple of BUCKET, at most SEQ."""
    return min(-(-longest // BUCKET) * BUCKET, SEQ)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    vocab = write_vocab(tmp_path_factory.mktemp("serving") / "vocab.txt")
    config = tiny_config()
    models = {
        "classifier": BertClassifier(BertEncoder.from_bert_config(config), num_classes=len(LABELS)),
        "squad": BertSpanLabeler(BertEncoder.from_bert_config(config)),
        "ner": BertTokenClassifier(BertEncoder.from_bert_config(config), num_classes=len(TAGS)),
        "swag": BertMultipleChoice(BertEncoder.from_bert_config(config), num_choices=2),
        "embedder": BertSentenceEmbedder(BertEncoder.from_bert_config(config), "mean", normalize=True),
    }
    for i, model in enumerate(models.values()):
        _scrambled(model, seed=i)
    tokenizer, packer = text_preprocessing(vocab, True, SEQ)
    roots = {
        "classifier": lambda run: ClassifierSavedModel(models["classifier"], tokenizer, packer, run, LABELS,
                                                       "single", True),
        "squad": lambda run: SpanLabelerSavedModel(models["squad"], tokenizer, packer, run, 5),
        "ner": lambda run: TokenClassifierSavedModel(models["ner"], tokenizer, packer, run, TAGS, 2),
        "swag": lambda run: MultipleChoiceSavedModel(models["swag"], tokenizer, packer, run),
        "embedder": lambda run: EmbedderSavedModel(models["embedder"], tokenizer, packer, run),
    }
    served = {}
    for kind, make_root in roots.items():
        for name, options in (("fixed", ServingOptions(length_bucket=None)),
                              ("dynamic", ServingOptions(length_bucket=BUCKET)),  # skipping padding: its default
                              ("plain", ServingOptions(length_bucket=BUCKET, skip_padding=False))):
            served[kind, name] = make_root(model_runner(models[kind], options)).__call__
    requests = {  # short and long texts, so that some requests are cut and one reaches SEQ
        "classifier": {"text_a": _texts(6, 1, 1, 8), "text_b": _texts(6, 2, 0, 5)},
        "squad": {"question": _texts(6, 3, 1, 4), "context": _texts(6, 4, 1, 9)},
        "ner": {"text": _texts(5, 5, 1, 12) + [" ".join(_texts(1, 6, 40, 41))]},  # the last one takes windows
        "swag": {"context": _texts(6, 7, 1, 4), "choices": np.reshape(_texts(12, 8, 1, 6), (6, 2)).tolist()},
        "embedder": {"text_a": _texts(5, 9, 1, 8) + [" ".join(_texts(1, 10, 40, 41))]},  # the last one is cut
    }
    return types.SimpleNamespace(vocab=vocab, models=models, served=served, requests=requests, roots=roots,
                                 full=FullTokenizer(vocab, do_lower_case=True), tokenizer=tokenizer, packer=packer)


def _call(fn, request, rows):
    return {k: np.asarray(v) for k, v in fn(**{k: tf.constant(v[rows]) for k, v in request.items()}).items()}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "swag", "ner", "embedder"])
def test_a_requests_outputs_are_the_fixed_length_exports(setup, kind):
    request = setup.requests[kind]
    for rows in (slice(0, 1), slice(None)):  # one short request, all of them
        fixed = _call(setup.served[kind, "fixed"], request, rows)
        dynamic = _call(setup.served[kind, "dynamic"], request, rows)
        assert set(fixed) == set(dynamic)
        for name, value in fixed.items():
            if value.dtype.kind == "f":
                np.testing.assert_allclose(dynamic[name], value, atol=1e-5, err_msg=f"{kind} {name}")
            else:
                np.testing.assert_array_equal(dynamic[name], value, err_msg=f"{kind} {name}")


@pytest.mark.slow
def test_squad_outputs_the_requests_bucketed_length_and_the_fixed_exports_values_there(setup):
    request, full = setup.requests["squad"], setup.full
    lengths = [
        3 + min(len(full.tokenize(q)), 5) + min(len(full.tokenize(c)), SEQ - 3 - min(len(full.tokenize(q)), 5))
        for q, c in zip(request["question"], request["context"], strict=True)
    ]
    for rows, served in itertools.product((slice(0, 1), slice(None)), ("dynamic", "plain")):
        fixed = _call(setup.served["squad", "fixed"], request, rows)
        dynamic = _call(setup.served["squad", served], request, rows)
        width = _bucketed(max(lengths[rows]))
        assert fixed["start_logits"].shape[1] == SEQ
        # Skipping the padding, the logits on padding positions (past a text's end, within the
        # width) are the model's on zero vectors; without it, the fixed export's there too.
        real = fixed["tokens"][:, :width] != b"" if served == "dynamic" else np.ones((len(lengths[rows]), width), bool)
        assert not real.all() or served == "plain"  # the bucket leaves padding, as the test needs
        for name in ("start_logits", "end_logits", "tokens", "input_type_ids"):  # the first window's
            value = fixed[name]
            assert dynamic[name].shape == (value.shape[0], width), name
            if name.endswith("logits"):
                np.testing.assert_allclose(dynamic[name][real], value[:, :width][real], atol=1e-5,
                                           err_msg=f"{served} {name}")
            else:
                np.testing.assert_array_equal(dynamic[name], value[:, :width], err_msg=name)
        # What was cut is padding only: the fixed export has no token past the width.
        assert (fixed["tokens"][:, width:] == b"").all()
    # The best span within the context, as a client picks it, is the same.
    fixed, dynamic = (_call(setup.served["squad", k], request, slice(None)) for k in ("fixed", "dynamic"))
    for out in (fixed, dynamic):
        out["best"] = np.argmax(np.where(out["input_type_ids"] == 1, out["start_logits"], -np.inf), axis=1)
    np.testing.assert_array_equal(dynamic["best"], fixed["best"])
    # ... and so is the answer.
    np.testing.assert_array_equal(dynamic["answer"], fixed["answer"])


def test_the_preprocessors_default_call_pads_to_the_bucket_and_bert_pack_inputs_keeps_its_length(setup):
    texts = _texts(5, 9, 1, 12)
    dynamic = PreprocessorSavedModel(setup.tokenizer, setup.packer, BUCKET)
    want = setup.packer(setup.tokenizer(tf.constant(texts)))  # TF Hub's fixed length
    width = _bucketed(max(min(len(setup.full.tokenize(t)), SEQ - 2) + 2 for t in texts))
    assert want["input_mask"].shape == (5, SEQ) and width < SEQ
    got = dynamic.__call__(tf.constant(texts))
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value[:, :width], err_msg=name)
    pieces = dynamic.tokenize.__call__(tf.constant(texts))
    assert dynamic.bert_pack_inputs.__call__([pieces])["input_mask"].shape == (5, SEQ)
    assert dynamic.bert_pack_inputs.__call__([pieces], seq_length=tf.constant(20))["input_mask"].shape == (5, 20)


@pytest.mark.slow
def test_an_xla_int8_export_serves_from_the_loaded_saved_model_as_its_model_in_process(setup, tmp_path):
    model = BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=len(LABELS))
    model.set_weights(setup.models["classifier"].get_weights())  # int8 quantizes the model in place
    serving = ServingOptions(length_bucket=BUCKET, jit_compile=True, quantize="int8")
    export_classifier(model, LABELS, "single", True, setup.vocab, True, SEQ, str(tmp_path / "int8"), serving=serving)
    loaded = tf.saved_model.load(str(tmp_path / "int8"))
    request = setup.requests["classifier"]
    served = _call(loaded.signatures["serving_default"], request, slice(None))
    # The quantized model in process, without XLA, on the same packed text.
    packed = setup.packer([setup.tokenizer(tf.constant(request[k])) for k in ("text_a", "text_b")])
    in_process = tf.nn.softmax(model(packed, training=False)).numpy()
    np.testing.assert_allclose(served["probabilities"], in_process, atol=1e-5)
    # int8 kernels with per-column scales, inputs quantized per row: close to float, not equal.
    fixed = _call(setup.served["classifier", "fixed"], request, slice(None))
    difference = np.abs(served["probabilities"] - fixed["probabilities"]).max()
    assert 0 < difference < 0.05, difference
    # Every Dense kernel is int8: per layer the attention's query, key, value and output, the
    # intermediate and output Dense (6), then the pooler and the head's Dense.
    assert len([v for v in loaded.variables if v.dtype == tf.int8]) == 6 * tiny_config().num_hidden_layers + 2
    with open(loaded.serving_file.asset_path.numpy().decode(), encoding="utf-8") as f:
        assert json.load(f) == {"seq_length": SEQ, "length_bucket": BUCKET, "jit_compile": True, "quantize": "int8",
                                "skip_padding": False, "mixed_precision": None}


def test_the_default_bucket_follows_the_serving_functions_xla_choice():
    assert ServingOptions().to_dict() == {"length_bucket": 1, "jit_compile": False, "quantize": None,
                                          "skip_padding": True, "mixed_precision": None}
    assert ServingOptions(jit_compile=True).length_bucket == 8  # one program per shape: few shapes
    assert ServingOptions(quantize="int8").to_dict() == {"length_bucket": 8, "jit_compile": True, "quantize": "int8",
                                                         "skip_padding": False, "mixed_precision": None}
    assert ServingOptions(length_bucket=4, jit_compile=True).length_bucket == 4
    assert ServingOptions(length_bucket=None, jit_compile=True).length_bucket is None  # fixed length
    assert ServingOptions(length_bucket=None).skip_padding is False  # fixed shapes: the original's graph
    with pytest.raises(ValueError, match="skip_padding=True needs jit_compile=False"):
        ServingOptions(jit_compile=True, skip_padding=True)
    # Settings left unset (a script's flags): the same defaults; pad_to_max_seq_length: fixed shapes.
    assert ServingOptions.given() == ServingOptions()
    assert ServingOptions.given(length_bucket=4, jit_compile=True) == ServingOptions(length_bucket=4, jit_compile=True)
    assert ServingOptions.given(length_bucket=4, pad_to_max_seq_length=True).length_bucket is None
    assert ServingOptions.given(skip_padding=False).skip_padding is False


def test_each_format_is_one_entry_of_the_table_that_the_options_and_the_xla_choice_read(monkeypatch):
    """float32, int8 and bf16 are FORMATS' entries, asked for by their ServingOptions setting; an
    entry added there is a format: its setting takes its value, and the options, the XLA choice,
    the log line's words and the model handed to the export follow it."""
    assert list(FORMATS) == ["float32", "int8", "bf16"]
    assert [ServingOptions(**entry.options).format for entry in FORMATS.values()] == list(FORMATS.values())
    assert serving.QUANTIZE_MODES == ("int8",) and serving.MIXED_PRECISION == {"bf16": "bfloat16"}
    assert set(serving.FORMAT_SETTINGS) <= set(serving.MODEL_SETTINGS)  # the encoder and preprocessor refuse them
    prepared = []
    monkeypatch.setitem(FORMATS, "int4", ServingFormat(
        "int4", "quantize", "int4", prepare=lambda model, value: prepared.append((model, value)) or model,
        jit_compile=True, jit_source="int4 matmuls want XLA", words="int4 Dense weights"))
    monkeypatch.setitem(FORMATS, "fp16", ServingFormat("fp16", "mixed_precision", "fp16", jit_compile=False))
    int4 = ServingOptions(quantize="int4")
    assert int4.format is FORMATS["int4"] and int4.to_dict() == {
        "length_bucket": 8, "jit_compile": True, "quantize": "int4", "skip_padding": False, "mixed_precision": None}
    assert int4.describe() == "length buckets of 8, XLA, int4 Dense weights"
    model = object()
    assert int4.format.prepared(model) is model and prepared == [(model, "int4")]
    assert FORMATS["fp16"].prepared(model) is model  # no prepare: the model as it is
    assert ServingOptions(mixed_precision="fp16").jit_compile is False
    # The XLA choice reads no speed file where the format decides.
    assert choose_serving_jit_compile(None, "int4") == (True, "int4 matmuls want XLA", None)
    assert choose_serving_jit_compile(None, None, mixed_precision="fp16") == (False, "mixed_precision=fp16", None)
    assert choose_serving_jit_compile(None, None, mixed_precision="bf16") == (False, "mixed_precision=bf16", None)
    with pytest.raises(ValueError, match=r"^quantize='int2' is not one of int8, int4$"):
        ServingOptions(quantize="int2")


def test_the_old_places_of_the_serving_rules_give_the_same_objects():
    for name in ("AUTO", "DEFAULT_SERVING", "MIXED_PRECISION", "QUANTIZE_MODES", "ServingOptions", "in_precision",
                 "quantize_dense_layers"):
        assert getattr(common, name) is getattr(serving, name), name
    assert exports.check_length_bucket is serving.check_length_bucket
    assert exports.DEFAULT_SERVING is serving.DEFAULT_SERVING


@pytest.mark.slow
def test_a_loaded_export_skips_the_padding_of_a_batch_and_serves_one_text_plainly(setup, tmp_path):
    """Written and loaded as a user serves it (no bert_tf in the graph): a batch of texts of
    different lengths goes through the padding-skipping branch, one text through the plain one;
    both give the fixed-length export's probabilities."""
    export_classifier(setup.models["classifier"], LABELS, "single", True, setup.vocab, True, SEQ,
                      str(tmp_path / "dynamic"))
    loaded = tf.saved_model.load(str(tmp_path / "dynamic"))
    graph = loaded.signatures["serving_default"].graph.as_graph_def()
    functions = {f.signature.name: f for f in graph.library.function}
    ops = {node.op for f in functions.values() for node in f.node_def}
    assert {"Where", "ScatterNd"} <= ops  # the skipping branch is in the export,
    assert ops & {"If", "StatelessIf"}  # chosen per request
    request = setup.requests["classifier"]
    for rows in (slice(0, 1), slice(None)):
        fixed = _call(setup.served["classifier", "fixed"], request, rows)
        served = _call(loaded.signatures["serving_default"], request, rows)
        np.testing.assert_allclose(served["probabilities"], fixed["probabilities"], atol=1e-5)
    with open(loaded.serving_file.asset_path.numpy().decode(), encoding="utf-8") as f:
        assert json.load(f)["skip_padding"] is True


def _product_dtypes(export_dir):
    """{dtype: count} of the products (MatMul) in the saved functions of `export_dir`."""
    saved = saved_model_pb2.SavedModel.FromString((export_dir / "saved_model.pb").read_bytes())
    return dict(collections.Counter(tf.dtypes.as_dtype(node.attr["T"].type).name
                                    for function in saved.meta_graphs[0].graph_def.library.function
                                    for node in function.node_def if node.op == "MatMul"))


@pytest.mark.slow
def test_a_bf16_export_holds_bfloat16_weights_and_products_and_leaves_the_model_as_it_was(setup, tmp_path):
    """Written and loaded as a user serves it: bfloat16 kernels and products, float32 LayerNorms
    and head; float32 probabilities close to the float32 export's but not equal (bfloat16's
    rounding), for one text and for a batch with padding; the model given is left float32, its
    weights untouched."""
    model = setup.models["classifier"]
    weights = [w.copy() for w in model.get_weights()]
    export_classifier(model, LABELS, "single", True, setup.vocab, True, SEQ, str(tmp_path / "bf16"),
                      serving=ServingOptions(mixed_precision="bf16"))
    loaded = tf.saved_model.load(str(tmp_path / "bf16"))
    one = {"text_a": [" ".join(WORDS[:8])], "text_b": ["runs"]}
    batch = {"text_a": _texts(12, 9, 8, 12), "text_b": _texts(12, 10, 1, 3)}
    for request in (one, batch):
        got = _call(loaded.signatures["serving_default"], request, slice(None))["probabilities"]
        want = _call(setup.served["classifier", "fixed"], request, slice(None))["probabilities"]
        assert got.dtype == np.float32
        assert 0 < np.abs(got - want).max() < 0.02, np.abs(got - want).max()  # 1.0e-2 measured
    config = tiny_config()
    hidden, layers = config.hidden_size, config.num_hidden_layers
    dtypes = collections.Counter((tuple(v.shape), v.dtype.name) for v in loaded.variables)
    assert dtypes[(hidden, config.intermediate_size), "bfloat16"] == layers  # the intermediate Dense kernels
    assert dtypes[(hidden, hidden), "bfloat16"] == 4 * layers + 1  # query, key, value, output; the pooler
    assert dtypes[(hidden,), "float32"] == 2 * (2 * layers + 1)  # the LayerNorms' gamma and beta
    assert dtypes[(hidden, len(LABELS)), "float32"] == 1  # the head's Dense
    products = _product_dtypes(tmp_path / "bf16")
    assert set(products) == {"bfloat16", "float32"} and products["bfloat16"] >= 6 * layers, products
    with open(loaded.serving_file.asset_path.numpy().decode(), encoding="utf-8") as f:
        assert json.load(f) == {"seq_length": SEQ, "length_bucket": 1, "jit_compile": False, "quantize": None,
                                "skip_padding": True, "mixed_precision": "bf16"}
    assert {layer.dtype_policy.name for layer in model._flatten_layers()} == {"float32"}
    for got, want in zip(model.get_weights(), weights, strict=True):
        np.testing.assert_array_equal(got, want)


def test_in_precision_copies_the_model_as_keras_builds_it_under_that_global_policy(setup):
    """The copy's layers take the policies of the same model built under Keras' global bfloat16
    policy: the LayerNorms and the head's last product stay float32; its weights are the model's,
    rounded to bfloat16 where the copy holds them so."""
    model = setup.models["classifier"]
    assert in_precision(model, None) is model
    copy = in_precision(model, "bf16")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("bfloat16")
    try:
        built = BertClassifier(BertEncoder.from_bert_config(tiny_config()), num_classes=len(LABELS))
    finally:
        keras.config.set_dtype_policy(previous)

    def policies(m):  # the int32 inputs' layers aside: no computation of theirs follows a policy
        return [(type(layer).__name__, layer.dtype_policy.name) for layer in m._flatten_layers()
                if not isinstance(layer, keras.layers.InputLayer)]

    assert policies(copy) == policies(built)
    assert ("LayerNormalization", "float32") in policies(copy) and ("Dense", "bfloat16") in policies(copy)
    for got, want in zip(copy.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want.astype(got.dtype), np.float32))


@pytest.mark.parametrize("kind, xla", [("classifier", False), ("squad", False), ("ner", False), ("swag", False),
                                       ("embedder", False), ("classifier", True)])
@pytest.mark.slow
def test_every_task_serves_bf16_close_to_its_float_export(setup, kind, xla):
    """Each task's serving function on the bfloat16 copy (as write_text_in_export runs it; XLA
    too, which the export allows when asked): the float32 outputs of the float export with the same
    options within bfloat16's rounding (measured: probabilities 1e-2, logits 1.6% of the largest)."""
    copy = in_precision(setup.models[kind], "bf16")
    run = model_runner(copy, ServingOptions(length_bucket=BUCKET, mixed_precision="bf16", jit_compile=xla))
    float32 = _call(setup.served[kind, "dynamic"], setup.requests[kind], slice(None))
    served = _call(setup.roots[kind](run).__call__, setup.requests[kind], slice(None))
    # SQuAD's answer figures (its n-best list, the answer's score) follow the spans chosen, which
    # bfloat16's rounding may reorder: its logits are compared.
    floats = [name for name, want in float32.items() if want.dtype.kind == "f" and not name.startswith("nbest_")
              and name not in ("score", "null_score_diff")]
    assert floats
    for name in floats:
        got, want = served[name], float32[name]
        assert got.dtype == np.float32 and got.shape == want.shape, name
        bound = 0.03 * np.abs(want).max() if "logits" in name else 0.02
        assert 0 < np.abs(got - want).max() < bound, (name, np.abs(got - want).max(), bound)


def test_quantizing_leaves_the_collectors_frozen_objects_as_they_were():
    """Dense layers become int8 under a temporary freeze; a process that froze nothing gets its
    objects back unfrozen, one that froze some (this test worker) keeps them frozen."""
    import gc

    def dense_model():
        inputs = keras.Input((4,))
        return keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(3)(inputs)))

    for freeze_first in (False, True):
        gc.unfreeze()
        if freeze_first:
            gc.freeze()
        model = serving.quantize_dense_layers(dense_model(), "int8")
        assert [v.dtype for v in model.variables if v.path.endswith("kernel")] == ["int8", "int8"]
        assert (gc.get_freeze_count() > 0) == freeze_first
    gc.freeze()


def test_a_model_that_cannot_be_built_in_bfloat16_is_refused_by_name():
    from bert_tf.models import BertFeatureTagger

    encoder = BertEncoder.from_bert_config(tiny_config(num_hidden_layers=4))
    tagger = BertFeatureTagger(encoder, 3, "weighted_sum_last_four", lstm_units=4)
    with pytest.raises(ValueError, match=r"^mixed_precision=bf16: a BertFeatureTagger cannot be built in Keras' "
                                         r"bfloat16 policy \(\w+"):
        in_precision(tagger, "bf16")


def test_mixed_precision_refuses_what_it_is_not_for():
    with pytest.raises(ValueError, match=r"^mixed_precision='fp16' is not one of bf16$"):
        ServingOptions(mixed_precision="fp16")
    with pytest.raises(ValueError, match=r"^mixed_precision=bf16 is for float weights, not quantize=int8"):
        ServingOptions(mixed_precision="bf16", quantize="int8")


_FROZEN_SERVER = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401 - the export's tokenizer ops
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
requests = json.loads(open(sys.argv[2]).read())
got = []
for turn in range(2):
    print("TURN", turn, flush=True)  # ONEDNN_VERBOSE's lines go to stdout too, between these
    got.append([serve(**{k: tf.constant(v) for k, v in r.items()})["probabilities"].numpy().tolist() for r in requests])
with open(sys.argv[3], "w") as f:
    json.dump(got, f)
"""


@pytest.mark.slow
def test_a_process_keeping_onednns_layouts_serves_every_row_class_exactly_and_lays_each_weight_out_once(
        setup, tmp_path):
    """A loaded float export in a process started with FROZEN_WEIGHTS_ENV=1, as model_runner
    describes: one text of each row class (LAYOUT_ROWS and outside it) and batches with padding of
    each class, twice over. Every answer equals the fixed-length export's; and where this
    machine's oneDNN lays weights out by rows as LAYOUT_ROWS says, the second turn re-lays no
    weight (each class has its own copy of the graph: in one copy, the first class's layout
    would be re-laid for the other's on every call)."""
    export_classifier(setup.models["classifier"], LABELS, "single", True, setup.vocab, True, SEQ,
                      str(tmp_path / "float"))
    low, high = LAYOUT_ROWS
    requests = [  # one text in the window and one below it; batches with padding, few real tokens and many
        {"text_a": [" ".join(WORDS[:9])], "text_b": [""]}, {"text_a": ["runs"], "text_b": [""]},
        {"text_a": _texts(8, 11, 1, 3), "text_b": [""] * 8},
        {"text_a": [" ".join(WORDS[:20])] * 7 + ["runs"], "text_b": [""] * 8},
    ]
    rows = [int(tf.reduce_sum(setup.packer([setup.tokenizer(tf.constant(r[k])) for k in ("text_a", "text_b")])[
        "input_mask"])) for r in requests]  # the products' rows: packed at exact length, or the real tokens
    assert low <= rows[0] <= high and rows[1] < low and low <= rows[2] <= high < rows[3], rows
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    # TensorFlow turns oneDNN on by itself only on some CPUs (AVX-512 and later); asked, it runs on AVX2 too.
    env = {**os.environ, FROZEN_WEIGHTS_ENV: "1", "ONEDNN_VERBOSE": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
           "TF_ENABLE_ONEDNN_OPTS": "1"}
    result = subprocess.run([sys.executable, "-c", _FROZEN_SERVER, str(tmp_path / "float"),
                             str(tmp_path / "requests.json"), str(tmp_path / "got.json")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    turns = json.loads((tmp_path / "got.json").read_text())
    for turn in turns:
        for request, got in zip(requests, turn, strict=True):
            want = _call(setup.served["classifier", "fixed"], request, slice(None))["probabilities"]
            np.testing.assert_allclose(got, want, atol=1e-5)
    first, second = result.stdout.split("TURN 1")
    products = [line for line in first.splitlines() if ",exec,cpu,inner_product," in line]
    assert products, "no oneDNN inner product ran: TensorFlow without oneDNN?"
    layouts = {found.group(1) for found in (re.search(r"wei:f32:a:blocked:(\w+)", line) for line in products)
               if found}
    if layouts != {"AB16b32a", "AB16b64a"}:  # the window LAYOUT_ROWS was measured with
        pytest.skip(f"this machine's oneDNN lays the weights out as {sorted(layouts)}, not by LAYOUT_ROWS {low}-{high}")
    relaid = [line for line in second.splitlines() if ",exec,cpu,reorder," in line and "dst:f32::blocked:AB" in line]
    assert not relaid, relaid
