"""An independent numpy statement of the original release's BERT math (modeling.py and
run_pretraining.py), written from the paper and the original code's rules, keyed by the
original checkpoint variable names. The tests compare our Keras layers against this."""

import numpy as np

EPS = 1e-12  # tf.contrib.layers.layer_norm


def layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * gamma + beta


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def bert(w, config, input_ids, input_mask, token_type_ids):
    """Returns (all_encoder_layers, pooled_output) in float64."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    B, S = input_ids.shape
    N = config.num_attention_heads
    H = config.hidden_size // N
    x = w["bert/embeddings/word_embeddings"][input_ids]
    x = x + np.eye(config.type_vocab_size)[token_type_ids] @ w["bert/embeddings/token_type_embeddings"]
    x = x + w["bert/embeddings/position_embeddings"][:S][None]
    x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
    adder = (1.0 - input_mask[:, None, None, :].astype(np.float64)) * -10000.0
    layers = []
    for i in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{i}/"

        def dense(t, name, p=p):
            return t @ w[p + name + "/kernel"] + w[p + name + "/bias"]

        def heads(t):
            return t.reshape(B, S, N, H).transpose(0, 2, 1, 3)

        q = heads(dense(x, "attention/self/query"))
        k = heads(dense(x, "attention/self/key"))
        v = heads(dense(x, "attention/self/value"))
        probs = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(H) + adder)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(B, S, N * H)
        a = layer_norm(
            dense(ctx, "attention/output/dense") + x,
            w[p + "attention/output/LayerNorm/gamma"],
            w[p + "attention/output/LayerNorm/beta"],
        )
        inter = gelu(dense(a, "intermediate/dense"))
        x = layer_norm(
            dense(inter, "output/dense") + a,
            w[p + "output/LayerNorm/gamma"],
            w[p + "output/LayerNorm/beta"],
        )
        layers.append(x)
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return layers, pooled


def pretraining_heads(w, sequence_output, pooled, positions):
    """Returns (masked-LM logits [B, P, V], next-sentence logits [B, 2])."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    gathered = np.take_along_axis(sequence_output, positions[:, :, None], axis=1)
    t = gelu(gathered @ w["cls/predictions/transform/dense/kernel"] + w["cls/predictions/transform/dense/bias"])
    t = layer_norm(t, w["cls/predictions/transform/LayerNorm/gamma"], w["cls/predictions/transform/LayerNorm/beta"])
    mlm = t @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    nsp = pooled @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
    return mlm, nsp


def pretraining_loss(mlm_logits, nsp_logits, masked_lm_ids, masked_lm_weights, next_sentence_labels):
    """The original's get_masked_lm_output + get_next_sentence_output losses, with one-hot sums."""
    V = mlm_logits.shape[-1]
    per_example = -(log_softmax(mlm_logits) * np.eye(V)[masked_lm_ids]).sum(-1)
    mlm = (masked_lm_weights * per_example).sum() / (masked_lm_weights.sum() + 1e-5)
    nsp = (-(log_softmax(nsp_logits) * np.eye(2)[next_sentence_labels]).sum(-1)).mean()
    return mlm, nsp
