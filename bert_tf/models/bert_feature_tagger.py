"""BERT's feature-based approach to NER (paper §5.3, Table 7): a frozen encoder's activations, taken
one of six ways, feed a randomly initialised two-layer BiLSTM and a tag layer; only those train.

The six ways (Table 7's rows; L = num_hidden_layers, 12 for BERT-Base):
    embeddings: the embedding output (after its LayerNorm), no Transformer layer.
    second_to_last: the hidden vectors of layer L - 1.
    last: those of layer L (`sequence_output`).
    weighted_sum_last_four: a learned weighted sum of layers L - 3 .. L.
    concat_last_four: layers L - 3 .. L concatenated, `4 * hidden_size` wide.
    weighted_sum_all: a learned weighted sum of the L Transformer layers ("all 12 layers": the
        embedding output is not one of them).

A weighted sum is ELMo's scalar mix (Peters et al., 2018, eq. 1): `gamma * sum_j softmax(s)_j h_j`,
with one scalar `s_j` per layer (starting at 0: the mean) and a scalar `gamma` (starting at 1),
both trained with the BiLSTM. The paper does not say how its weights were normalised; the
softmax keeps them a convex combination whatever the learning rate.
"""

import keras
from keras import ops

from bert_tf.errors import shown
from bert_tf.layers.token_classification_head import TokenClassificationHead
from bert_tf.models.bert_classifier import DROPOUT_RATE, HEAD_INITIALIZER_RANGE
from bert_tf.models.bert_encoder import INPUT_NAMES, BertEncoder, task_model_config, with_encoder_deserialized

FEATURE_LAYERS = (
    "embeddings", "second_to_last", "last", "weighted_sum_last_four", "concat_last_four", "weighted_sum_all",
)
LSTM_UNITS = 768  # "a randomly initialized two-layer 768-dimensional BiLSTM" (§5.3), per direction here


def feature_layer_indices(feature_based, num_hidden_layers):
    """Which of the encoder's outputs `feature_based` reads, as indices into
    `[embedding_output, layer 1, ..., layer num_hidden_layers]`. A ValueError names an unknown
    name, or an encoder with too few layers for it."""
    n = num_hidden_layers
    indices = {
        "embeddings": [0],
        "second_to_last": [n - 1],
        "last": [n],
        "weighted_sum_last_four": list(range(n - 3, n + 1)),
        "concat_last_four": list(range(n - 3, n + 1)),
        "weighted_sum_all": list(range(1, n + 1)),
    }
    if feature_based not in indices:
        raise ValueError(f"{shown.feature_based}={feature_based!r} is not one of {', '.join(FEATURE_LAYERS)}")
    needed = {"second_to_last": 2, "weighted_sum_last_four": 4, "concat_last_four": 4}.get(feature_based, 1)
    if n < needed:
        raise ValueError(
            f"{shown.feature_based}={feature_based!r} needs at least {needed} hidden layers, but the encoder has {n}"
        )
    return indices[feature_based]


@keras.saving.register_keras_serializable(package="bert_tf")
class BertFeatureTagger(keras.Model):
    """A frozen `BertEncoder` whose features feed a two-layer BiLSTM and a tag layer (paper §5.3).

    The features `feature_based` names feed a two-layer bidirectional LSTM and a
    `TokenClassificationHead` on its outputs; only those train. A subclassed model, unlike the
    functional task models: a functional model hands its own `training` to every layer it calls,
    the encoder's included, and the encoder must run without dropout whatever the model's call
    says.

    Args:
        encoder: The BertEncoder. It is frozen (its `trainable` set to False) and always runs
            as at inference (no dropout), so that its activations are fixed features, as the
            paper extracts them; no gradient reaches it.
        num_classes: int. The number of tags (softmax over them at each position).
        feature_based: str. Which layers feed the BiLSTM: one of FEATURE_LAYERS (Table 7's rows,
            see the module docstring).
        lstm_units: int. Each LSTM direction's width (the BiLSTM's outputs are twice as wide).
            Defaults to 768 (the paper's "768-dimensional BiLSTM", taken per direction).
        dropout_rate: float. The dropout rate before the tag layer. Defaults to 0.1, as the
            fine-tuned token classifier.
        initializer_range: float. The standard deviation of the tag layer's truncated normal.
            Defaults to 0.02.
        dtype: None, a dtype name or a `keras.DTypePolicy`: the layers' and the model's policy.
            None (the default) takes the encoder's.
        **kwargs: Other keyword arguments of `keras.Model` (`name`, `trainable`).

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, int32
    `[batch, seq]`); the LSTMs skip the positions where `input_mask` is 0.

    Outputs: float32 logits `[batch, seq, num_classes]`, as `BertTokenClassifier`'s, so the same
    loss, first-piece weights, plain `fit` and NER export apply.

    Raises:
        ValueError: `feature_based` is not one of FEATURE_LAYERS, the encoder has too few layers
            for it, `lstm_units` is below 1, or `num_classes` is below 1.
    """

    def __init__(
        self,
        encoder: BertEncoder,
        num_classes,
        feature_based,
        lstm_units=LSTM_UNITS,
        dropout_rate=DROPOUT_RATE,
        initializer_range=HEAD_INITIALIZER_RANGE,
        dtype=None,
        **kwargs,
    ):
        indices = feature_layer_indices(feature_based, encoder.num_hidden_layers)
        if lstm_units < 1:
            raise ValueError(f"{shown.lstm_units}={lstm_units} must be at least 1")
        dtype = dtype if dtype is not None else encoder.dtype_policy
        super().__init__(dtype=dtype, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.feature_based = feature_based
        self.lstm_units = lstm_units
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.feature_indices = indices  # into [embedding_output, *encoder_outputs]

        # === Layers ===
        self.encoder = encoder
        encoder.trainable = False
        # Two attributes, not a list: TensorFlow checkpoints do not reach into a subclassed
        # Keras model's lists, and the training loop's checkpoints must hold the LSTMs.
        self.bilstm_1, self.bilstm_2 = (
            keras.layers.Bidirectional(
                keras.layers.LSTM(lstm_units, return_sequences=True, dtype=dtype), dtype=dtype, name=f"bilstm_{i}"
            )
            for i in (1, 2)
        )
        self.classifier = TokenClassificationHead(
            num_classes=num_classes,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            dtype=dtype,
            name="classifier",
        )
        # Built now: the training loop's optimizer needs the variables before any call.
        self.build()

    @property
    def mixes(self):
        """Whether the features are a learned weighted sum of layers."""
        return self.feature_based.startswith("weighted_sum")

    def build(self, input_shape=None):
        n = len(self.feature_indices)
        width = self.encoder.hidden_size * (n if self.feature_based == "concat_last_four" else 1)
        if self.mixes:
            self.layer_weights = self.add_weight(shape=(n,), initializer="zeros", name="layer_weights")
            self.gamma = self.add_weight(shape=(), initializer="ones", name="gamma")
        for lstm in (self.bilstm_1, self.bilstm_2):
            lstm.build((None, None, width))
            width = 2 * self.lstm_units
        self.classifier.build((None, None, width))
        self.built = True

    def features(self, inputs):
        """The frozen encoder's features, as `feature_based` takes them.

        Args:
            inputs: The encoder's input dict (`input_word_ids`, `input_mask`, `input_type_ids`, int32
                `[batch, seq]`); other keys are ignored.

        Returns:
            `[batch, seq, width]` (width: hidden_size, or 4 * hidden_size for concat_last_four), with
            no gradient to the encoder. The dtype is the encoder outputs': float32 for the Transformer
            layers' outputs (they leave a float32 LayerNorm), the compute dtype for `embeddings`.
        """
        outputs = self.encoder({name: inputs[name] for name in INPUT_NAMES}, training=False)
        layers = [outputs["embedding_output"], *outputs["encoder_outputs"]]
        # Fixed activations, as the paper extracts them: no back-propagation into BERT.
        chosen = [ops.stop_gradient(layers[i]) for i in self.feature_indices]  # each [B, S, H]
        if self.feature_based == "concat_last_four":
            return ops.concatenate(chosen, axis=-1)  # [B, S, 4H]
        if not self.mixes:
            return chosen[0]
        dtype = chosen[0].dtype
        weights = ops.cast(ops.softmax(self.layer_weights), dtype)  # [n]
        mixed = ops.sum(ops.stack(chosen, axis=-1) * weights, axis=-1)  # [B, S, H, n] -> [B, S, H]
        return ops.cast(self.gamma, dtype) * mixed

    def call(self, inputs, training=None):
        x = self.features(inputs)
        mask = ops.cast(inputs["input_mask"], "bool")  # [B, S]
        for lstm in (self.bilstm_1, self.bilstm_2):
            x = lstm(x, mask=mask, training=training)  # [B, S, 2 * lstm_units]
        # Padding positions zero (as Keras's LSTMs leave them), in a new tensor that carries no
        # Keras mask to the head, which has no use for one.
        x = ops.where(ops.expand_dims(mask, -1), x, ops.zeros_like(x))
        return self.classifier(x, training=training)  # [B, S, num_classes]

    def get_config(self):
        return {
            **task_model_config(self),
            "num_classes": self.num_classes,
            "feature_based": self.feature_based,
            "lstm_units": self.lstm_units,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**with_encoder_deserialized(config))
