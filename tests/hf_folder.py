"""Hugging Face folders laid out as transformers writes them, made from original-layout weights
(`tests.tf1_checkpoint`) for the tests: `model.safetensors` written with safetensors alone, or
`tf_model.h5` in transformers' TensorFlow layout written with h5py. The names are spelled out
here by hand for the tiny 2-layer model, independently of bert_tf's own mapping."""

import json

import h5py
import numpy as np
from safetensors.numpy import save_file

# (transformers' PyTorch name without `bert.`, original name, stored transposed?) for 2 layers.
ENCODER_NAMES = [
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", False),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", False),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", False),
    ("embeddings.LayerNorm.weight", "bert/embeddings/LayerNorm/gamma", False),
    ("embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", False),
    ("encoder.layer.0.attention.self.query.weight", "bert/encoder/layer_0/attention/self/query/kernel", True),
    ("encoder.layer.0.attention.self.query.bias", "bert/encoder/layer_0/attention/self/query/bias", False),
    ("encoder.layer.0.attention.self.key.weight", "bert/encoder/layer_0/attention/self/key/kernel", True),
    ("encoder.layer.0.attention.self.key.bias", "bert/encoder/layer_0/attention/self/key/bias", False),
    ("encoder.layer.0.attention.self.value.weight", "bert/encoder/layer_0/attention/self/value/kernel", True),
    ("encoder.layer.0.attention.self.value.bias", "bert/encoder/layer_0/attention/self/value/bias", False),
    ("encoder.layer.0.attention.output.dense.weight", "bert/encoder/layer_0/attention/output/dense/kernel", True),
    ("encoder.layer.0.attention.output.dense.bias", "bert/encoder/layer_0/attention/output/dense/bias", False),
    ("encoder.layer.0.attention.output.LayerNorm.weight", "bert/encoder/layer_0/attention/output/LayerNorm/gamma",
     False),
    ("encoder.layer.0.attention.output.LayerNorm.bias", "bert/encoder/layer_0/attention/output/LayerNorm/beta", False),
    ("encoder.layer.0.intermediate.dense.weight", "bert/encoder/layer_0/intermediate/dense/kernel", True),
    ("encoder.layer.0.intermediate.dense.bias", "bert/encoder/layer_0/intermediate/dense/bias", False),
    ("encoder.layer.0.output.dense.weight", "bert/encoder/layer_0/output/dense/kernel", True),
    ("encoder.layer.0.output.dense.bias", "bert/encoder/layer_0/output/dense/bias", False),
    ("encoder.layer.0.output.LayerNorm.weight", "bert/encoder/layer_0/output/LayerNorm/gamma", False),
    ("encoder.layer.0.output.LayerNorm.bias", "bert/encoder/layer_0/output/LayerNorm/beta", False),
    ("encoder.layer.1.attention.self.query.weight", "bert/encoder/layer_1/attention/self/query/kernel", True),
    ("encoder.layer.1.attention.self.query.bias", "bert/encoder/layer_1/attention/self/query/bias", False),
    ("encoder.layer.1.attention.self.key.weight", "bert/encoder/layer_1/attention/self/key/kernel", True),
    ("encoder.layer.1.attention.self.key.bias", "bert/encoder/layer_1/attention/self/key/bias", False),
    ("encoder.layer.1.attention.self.value.weight", "bert/encoder/layer_1/attention/self/value/kernel", True),
    ("encoder.layer.1.attention.self.value.bias", "bert/encoder/layer_1/attention/self/value/bias", False),
    ("encoder.layer.1.attention.output.dense.weight", "bert/encoder/layer_1/attention/output/dense/kernel", True),
    ("encoder.layer.1.attention.output.dense.bias", "bert/encoder/layer_1/attention/output/dense/bias", False),
    ("encoder.layer.1.attention.output.LayerNorm.weight", "bert/encoder/layer_1/attention/output/LayerNorm/gamma",
     False),
    ("encoder.layer.1.attention.output.LayerNorm.bias", "bert/encoder/layer_1/attention/output/LayerNorm/beta", False),
    ("encoder.layer.1.intermediate.dense.weight", "bert/encoder/layer_1/intermediate/dense/kernel", True),
    ("encoder.layer.1.intermediate.dense.bias", "bert/encoder/layer_1/intermediate/dense/bias", False),
    ("encoder.layer.1.output.dense.weight", "bert/encoder/layer_1/output/dense/kernel", True),
    ("encoder.layer.1.output.dense.bias", "bert/encoder/layer_1/output/dense/bias", False),
    ("encoder.layer.1.output.LayerNorm.weight", "bert/encoder/layer_1/output/LayerNorm/gamma", False),
    ("encoder.layer.1.output.LayerNorm.bias", "bert/encoder/layer_1/output/LayerNorm/beta", False),
]
POOLER_NAMES = [
    ("pooler.dense.weight", "bert/pooler/dense/kernel", True),
    ("pooler.dense.bias", "bert/pooler/dense/bias", False),
]
# The heads: the MLM output layer is tied to the word embeddings (not stored); the NSP head and
# the fine-tuned heads are [outputs, hidden] in both layouts.
PRETRAINING_NAMES = [
    ("cls.predictions.transform.dense.weight", "cls/predictions/transform/dense/kernel", True),
    ("cls.predictions.transform.dense.bias", "cls/predictions/transform/dense/bias", False),
    ("cls.predictions.transform.LayerNorm.weight", "cls/predictions/transform/LayerNorm/gamma", False),
    ("cls.predictions.transform.LayerNorm.bias", "cls/predictions/transform/LayerNorm/beta", False),
    ("cls.predictions.bias", "cls/predictions/output_bias", False),
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights", False),
    ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias", False),
]
CLASSIFIER_HEAD = [("classifier.weight", "output_weights", False), ("classifier.bias", "output_bias", False)]
QA_HEAD = [
    ("qa_outputs.weight", "cls/squad/output_weights", False),
    ("qa_outputs.bias", "cls/squad/output_bias", False),
]
# transformers' class -> (our kind or model, its head's names, has the pooler?)
ARCHITECTURES = {
    "BertModel": ("encoder", [], True),
    "BertForPreTraining": ("pretrainer", PRETRAINING_NAMES, True),
    "BertForSequenceClassification": ("classifier", CLASSIFIER_HEAD, True),
    "BertForQuestionAnswering": ("squad", QA_HEAD, False),
    "BertForTokenClassification": ("ner", CLASSIFIER_HEAD, False),
    "BertForMultipleChoice": ("swag", CLASSIFIER_HEAD, True),
}


def head_shapes(architecture, config, outputs=3):
    """The original-layout shapes of a task head (`outputs` labels for a classifier or tagger)."""
    h = config.hidden_size
    return {
        "BertForSequenceClassification": {"output_weights": (outputs, h), "output_bias": (outputs,)},
        "BertForTokenClassification": {"output_weights": (outputs, h), "output_bias": (outputs,)},
        "BertForMultipleChoice": {"output_weights": (1, h), "output_bias": (1,)},
        "BertForQuestionAnswering": {"cls/squad/output_weights": (2, h), "cls/squad/output_bias": (2,)},
    }.get(architecture, {})


def names(architecture):
    """The (name, original name, transposed?) entries transformers saves for `architecture`."""
    _, head, pooler = ARCHITECTURES[architecture]
    return ENCODER_NAMES + (POOLER_NAMES if pooler else []) + head


def pytorch_tensors(weights, architecture, prefix=True):
    """transformers' PyTorch state dict of `architecture` from original-layout `weights`."""
    out = {}
    for name, original, transposed in names(architecture):
        value = weights[original].T if transposed else weights[original]
        bert = prefix and not name.startswith(("cls.", "classifier.", "qa_outputs."))
        out[("bert." if bert else "") + name] = np.ascontiguousarray(value)
    return out


def config_json(config, architecture, **fields):
    """config.json as transformers writes it for the tiny BertConfig `config` (tanh GELU)."""
    values = {
        "architectures": [architecture], "model_type": "bert", "hidden_act": {"gelu": "gelu_new"}[config.hidden_act],
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute", "is_decoder": False,
        "transformers_version": "4.44.0", "torch_dtype": "float32", "use_cache": True,
    }
    for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
                 "type_vocab_size", "initializer_range"):
        values[name] = getattr(config, name)
    values.update(fields)
    return values


def write_folder(directory, weights, config, architecture, vocab=None, do_lower_case=True, prefix=True,
                 fmt="safetensors", **config_fields):
    """A folder as transformers' `save_pretrained` leaves it: config.json, the weights
    (`fmt` "safetensors" or "h5"), and with `vocab` vocab.txt and tokenizer_config.json."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config_json(config, architecture, **config_fields), indent=2))
    if fmt == "safetensors":
        save_file(pytorch_tensors(weights, architecture, prefix), str(directory / "model.safetensors"),
                  metadata={"format": "pt"})
    else:
        write_tf_h5(directory / "tf_model.h5", weights, architecture)
    if vocab is not None:
        (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        tokenizer = {"do_lower_case": do_lower_case, "tokenizer_class": "BertTokenizer", "model_max_length": 512}
        (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer))
    return directory


# transformers' TensorFlow names, from the original's: Keras kernels are [in, out] as the
# original's, so only the heads the original stores [outputs, hidden] are transposed.
_TF_RENAMES = [
    ("cls/predictions/output_bias", "mlm___cls/predictions/bias"),
    ("cls/predictions/", "mlm___cls/predictions/"),
    ("cls/seq_relationship/output_weights", "nsp___cls/seq_relationship/kernel"),
    ("cls/seq_relationship/output_bias", "nsp___cls/seq_relationship/bias"),
    ("cls/squad/output_weights", "qa_outputs/kernel"),
    ("cls/squad/output_bias", "qa_outputs/bias"),
    ("output_weights", "classifier/kernel"),
    ("output_bias", "classifier/bias"),
    ("bert/embeddings/word_embeddings", "bert/embeddings/word_embeddings/weight"),
    ("bert/embeddings/position_embeddings", "bert/embeddings/position_embeddings/embeddings"),
    ("bert/embeddings/token_type_embeddings", "bert/embeddings/token_type_embeddings/embeddings"),
]


def _tf_name(original):
    for old, new in _TF_RENAMES:
        if original.startswith(old):
            original = new + original[len(old):]
            break
    for i in range(2):
        original = original.replace(f"/layer_{i}/", f"/layer_._{i}/")
    return original


def write_tf_h5(path, weights, architecture):
    """transformers' TF `save_weights` file: one group per top-level layer (`bert`, `mlm___cls`,
    `nsp___cls`, `classifier`, `qa_outputs`) listing its weights' full names, which start with
    the model's scope; the MLM head lists the tied word embeddings again, as real files do."""
    scope = {"BertModel": "tf_bert_model", "BertForPreTraining": "tf_bert_for_pre_training"}.get(
        architecture, "tf_" + architecture.lower()
    )
    groups = {}
    for _, original, _ in names(architecture):
        name = _tf_name(original)
        value = weights[original]
        if name.endswith(("classifier/kernel", "qa_outputs/kernel", "seq_relationship/kernel")):
            value = value.T
        groups.setdefault(name.split("/")[0], []).append((f"{scope}/{name}:0", value))
    if "mlm___cls" in groups:
        groups["mlm___cls"].append((f"{scope}/bert/embeddings/word_embeddings/weight:0",
                                    weights["bert/embeddings/word_embeddings"]))
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [g.encode() for g in groups]
        for group_name, entries in groups.items():
            group = f.create_group(group_name)
            group.attrs["weight_names"] = [n.encode() for n, _ in entries]
            for name, value in entries:
                group.create_dataset(name, data=value)
