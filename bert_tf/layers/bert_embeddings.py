"""Input embeddings: word + position + token type, then LayerNorm and dropout (paper §3, Fig. 2)."""

import keras
from keras import ops

from bert_tf.layers.common import layer_norm, truncated_normal


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbeddings(keras.layers.Layer):
    """The original release's `embedding_lookup` + `embedding_postprocessor`.

    The word, token-type (segment) and position embeddings are summed, then go through a float32
    LayerNorm and dropout. Positions are 0..seq-1; `seq` may not exceed `max_position_embeddings`.

    Args:
        vocab_size: int. The number of rows of the word-embedding table.
        hidden_size: int. The width of every embedding.
        max_position_embeddings: int. The number of rows of the position-embedding table: the
            longest sequence the layer takes. Defaults to 512.
        type_vocab_size: int. The number of rows of the token-type table. Defaults to 16 (the
            original's default; the released checkpoints use 2).
        hidden_dropout_prob: float. The dropout rate on the output. Defaults to 0.1.
        initializer_range: float. The standard deviation of the tables' truncated normal
            initializer. Defaults to 0.02.
        **kwargs: Other keyword arguments of `keras.layers.Layer` (`name`, `dtype`, ...).

    Call arguments:
        word_ids: int tensor of shape `[batch, seq]`, WordPiece ids.
        type_ids: int tensor of shape `[batch, seq]`, segment ids (0 for A, 1 for B);
            zeros when omitted.
        training: whether dropout is active.

    Returns:
        A float tensor of shape `[batch, seq, hidden_size]`.

    Raises:
        ValueError: When called on a sequence whose static length exceeds `max_position_embeddings`.
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=16,
        hidden_dropout_prob=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range

    def build(self, word_ids_shape, type_ids_shape=None):
        init = truncated_normal(self.initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            self.vocab_size,
            self.hidden_size,
            embeddings_initializer=init,
            dtype=self.dtype_policy,
            name="word_embeddings",
        )
        self.word_embeddings.build(word_ids_shape)
        self.token_type_embeddings = keras.layers.Embedding(
            self.type_vocab_size,
            self.hidden_size,
            embeddings_initializer=init,
            dtype=self.dtype_policy,
            name="token_type_embeddings",
        )
        self.token_type_embeddings.build(word_ids_shape)
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=init,
        )
        self.layer_norm = layer_norm("layer_norm")
        self.layer_norm.build(tuple(word_ids_shape) + (self.hidden_size,))
        self.dropout = keras.layers.Dropout(self.hidden_dropout_prob, dtype=self.dtype_policy)
        self.built = True

    @property
    def embedding_table(self):
        """The word-embedding matrix `[vocab_size, hidden_size]` (tied to the masked-LM output)."""
        return self.word_embeddings.embeddings

    def call(self, word_ids, type_ids=None, training=None):
        seq_length = word_ids.shape[1]
        if isinstance(seq_length, int) and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"sequence length {seq_length} exceeds max_position_embeddings "
                f"{self.max_position_embeddings}"
            )
        if type_ids is None:
            type_ids = ops.zeros_like(word_ids)
        x = self.word_embeddings(word_ids)  # [B, S, hidden]
        x = x + self.token_type_embeddings(type_ids)
        seq = ops.shape(word_ids)[1]
        positions = ops.convert_to_tensor(self.position_embeddings)[:seq]  # [S, hidden]
        x = x + ops.cast(positions, x.dtype)[None, :, :]  # broadcast over the batch
        x = self.layer_norm(x)
        return self.dropout(x, training=training)

    def compute_output_spec(self, word_ids, type_ids=None, training=None):
        # Declared, not traced: symbolic tracing of `call` is fragile on some backends. The
        # output leaves the float32 LayerNorm.
        return keras.KerasTensor(tuple(word_ids.shape) + (self.hidden_size,), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            hidden_dropout_prob=self.hidden_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
