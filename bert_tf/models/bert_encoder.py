"""The BERT encoder (backbone, no task head) as a functional Keras model (paper §3)."""

import contextlib

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.common import truncated_normal
from bert_tf.layers.transformer_block import TransformerBlock

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_inputs():
    """The encoder's input dict: int32 tensors of shape `[batch, seq]`, TF Hub BERT names.

    Returns:
        A dict of `keras.Input`s, one for each of `INPUT_NAMES` (`input_word_ids`, `input_mask`,
        `input_type_ids`), each int32 of shape `[batch, seq]` with both dimensions unknown.
    """
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


def last_layer_rows(encoder, inputs, rows):
    """The encoder's last layer computed only for the positions `rows` (int `[batch, F]`):
    `[batch, F, hidden_size]` (float32).

    Heads that read a few rows (the masked positions, [CLS]) need no other row of the last
    layer; its keys and values still span the sequence, so these rows are exactly the full
    layer's, for about (1 - F / seq) less of its work. The encoder's own last layer is then
    unused, and graph compilation (tf.function, XLA, jax.jit) drops it.
    """
    outputs = encoder({k: inputs[k] for k in encoder.input})
    below_last = [outputs["embedding_output"], *outputs["encoder_outputs"]][-2]
    return encoder.transformer_layers[-1](below_last, attention_mask=inputs["input_mask"], query_positions=rows)


@contextlib.contextmanager
def padding_skipped(model, skip=True):
    """Makes every `TransformerBlock` in `model` skip the padding rows within the context.

    `model` is an encoder, a task model on one, or any layer that holds them; each of its blocks
    gets `TransformerBlock.skip_padding` set. A call traced here (`tf.function`) keeps skipping,
    and so does a function Keras caches here (`fit`'s train_function:
    `make_train_function(force=True)` traces it anew). Outputs on real tokens are unchanged;
    padding rows of sequence outputs are zeros. For TensorFlow graphs without XLA and eager calls,
    where a shape may depend on the data (the number of real tokens). On leaving the context each
    block's `skip_padding` is set back to what it was.

    Args:
        model: A Keras model or layer that holds `TransformerBlock`s.
        skip: bool. False makes a context that changes nothing. Defaults to True.

    Yields:
        `model` itself.

    Raises:
        ValueError: `skip` is True and `model` holds no `TransformerBlock`.
    """
    blocks = [layer for layer in model._flatten_layers() if isinstance(layer, TransformerBlock)] if skip else []
    if skip and not blocks:
        raise ValueError(f"{model.name} holds no TransformerBlock whose padding could be skipped")
    before = [block.skip_padding for block in blocks]
    for block in blocks:
        block.skip_padding = True
    try:
        yield model
    finally:
        for block, was in zip(blocks, before, strict=True):
            block.skip_padding = was


def task_model_config(model):
    """The part of a task model's `get_config` that every model on an encoder shares."""
    return {
        "name": model.name,
        "trainable": model.trainable,
        "dtype": keras.dtype_policies.serialize(model.dtype_policy),
        "encoder": keras.saving.serialize_keras_object(model.encoder),
    }


def with_encoder_deserialized(config):
    """A task model's `get_config` dict with its `encoder` (and dtype policy) revived, ready for
    the constructor (the shared half of every task model's `from_config`)."""
    config = dict(config)
    config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
    if isinstance(config.get("dtype"), dict):
        config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
    return config


def first_row(inputs):
    """Position 0 ([CLS]) of every example, as `rows` for `last_layer_rows`: int `[batch, 1]`."""
    return ops.zeros_like(inputs["input_mask"][:, :1])


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.Model):
    """BERT: embeddings, `num_hidden_layers` Transformer blocks, pooler.

    The constructor arguments are `BertConfig`'s fields, with the same names
    (`BertEncoder.from_bert_config(config)` passes them), plus `output_attention_probs`; they are
    checked by `BertConfig`'s rules.

    Args:
        vocab_size: int. The number of rows of the word-embedding table.
        hidden_size: int. The width of the embeddings and of every layer's output; a multiple of
            `num_attention_heads`. Defaults to 768.
        num_hidden_layers: int. The number of Transformer blocks. Defaults to 12.
        num_attention_heads: int. The number of attention heads in each block. Defaults to 12.
        intermediate_size: int. The width of each block's feed-forward layer. Defaults to 3072.
        hidden_act: str. The feed-forward activation, one of `bert_tf.config.ACTIVATIONS`.
            Defaults to "gelu".
        hidden_dropout_prob: float. The dropout rate on the embeddings and each sublayer's output.
            Defaults to 0.1.
        attention_probs_dropout_prob: float. The dropout rate on the attention probabilities.
            Defaults to 0.1.
        max_position_embeddings: int. The longest sequence the encoder takes (the position table's
            rows). Defaults to 512.
        type_vocab_size: int. The number of segment ids. Defaults to 16 (the original's default;
            the released checkpoints use 2).
        initializer_range: float. The standard deviation of every kernel's and table's truncated
            normal initializer. Defaults to 0.02.
        output_attention_probs: bool. Whether to add each layer's attention probabilities to the
            outputs. Defaults to False.
        dtype: None, a dtype name or a `keras.DTypePolicy` (e.g. "mixed_bfloat16"): the policy of
            every layer. None (the default) takes Keras's global policy.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs (a dict; int32 tensors of shape `[batch, seq]`, seq <= max_position_embeddings):
        input_word_ids: WordPiece ids, 0-padded.
        input_mask: 1 for real tokens, 0 for padding.
        input_type_ids: segment ids, 0 for the first segment, 1 for the second.

    Outputs (a dict):
        sequence_output: `[batch, seq, hidden_size]`, the last layer.
        pooled_output: `[batch, hidden_size]`, tanh(dense(first token of the last layer)).
        encoder_outputs: list of `num_hidden_layers` tensors `[batch, seq, hidden_size]`.
        embedding_output: `[batch, seq, hidden_size]`, the embeddings after LayerNorm/dropout.
        attention_probs (only with output_attention_probs): list of `[batch, heads, seq, seq]`.

    Raises:
        ValueError: A hyper-parameter breaks `BertConfig`'s rules (a size not a positive integer,
            `hidden_size` not a multiple of `num_attention_heads`, an unknown `hidden_act`, ...).
    """

    def __init__(
        self,
        vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=16,
        initializer_range=0.02,
        output_attention_probs=False,
        dtype=None,
        **kwargs,
    ):
        # Validate through the one place that knows the rules.
        config = BertConfig(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_size,
            hidden_act=hidden_act,
            hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            initializer_range=initializer_range,
        )

        # === Layers ===
        self.embeddings = BertEmbeddings(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            hidden_dropout_prob=hidden_dropout_prob,
            initializer_range=initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        self.transformer_layers = [
            TransformerBlock(
                hidden_size=hidden_size,
                num_attention_heads=num_attention_heads,
                intermediate_size=intermediate_size,
                hidden_act=hidden_act,
                hidden_dropout_prob=hidden_dropout_prob,
                attention_probs_dropout_prob=attention_probs_dropout_prob,
                initializer_range=initializer_range,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_hidden_layers)
        ]
        self.pooler_dense = keras.layers.Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=truncated_normal(initializer_range),
            dtype=dtype,
            name="pooler_dense",
        )

        # === Functional model ===
        inputs = encoder_inputs()
        mask = inputs["input_mask"]
        embedding_output = self.embeddings(inputs["input_word_ids"], inputs["input_type_ids"])
        x = embedding_output
        encoder_outputs, attention_probs = [], []
        for block in self.transformer_layers:
            if output_attention_probs:
                x, probs = block(x, attention_mask=mask, return_probs=True)
                attention_probs.append(probs)
            else:
                x = block(x, attention_mask=mask)
            encoder_outputs.append(x)
        pooled_output = self.pooler_dense(x[:, 0, :])
        outputs = {
            "sequence_output": x,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }
        if output_attention_probs:
            outputs["attention_probs"] = attention_probs
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        if dtype is not None:
            # The functional constructor drops `dtype`; without this a reloaded mixed-precision
            # encoder would report float32 and heads built on it would follow.
            self.dtype_policy = dtype

        # === Config ===
        for name, value in config.encoder_kwargs().items():
            setattr(self, name, value)
        self.output_attention_probs = output_attention_probs

    @classmethod
    def from_bert_config(cls, config: BertConfig, **kwargs):
        """Builds an encoder from a `BertConfig`.

        Args:
            config: The BertConfig whose fields (`config.encoder_kwargs()`) are the constructor's
                arguments.
            **kwargs: Extra keyword arguments of the constructor (`output_attention_probs`, `dtype`,
                `name`, ...).

        Returns:
            The BertEncoder.
        """
        return cls(**config.encoder_kwargs(), **kwargs)

    def bert_config(self) -> BertConfig:
        """The encoder's hyper-parameters as a config.

        Returns:
            A BertConfig of the encoder's values of `BertConfig`'s fields (`extra` empty).
        """
        return BertConfig(**{name: getattr(self, name) for name in BertConfig.field_names()})

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "output_attention_probs": self.output_attention_probs,
        }
        config.update(self.bert_config().encoder_kwargs())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
