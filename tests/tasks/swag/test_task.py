"""SWAG's sequences as the paper packs them: [CLS] sent1 [SEP] sent2 ending [SEP], per choice."""

import numpy as np
import pytest

from bert_tf.tasks.swag.reader import SwagExample, encode_examples
from bert_tf.tasks.swag.task import SwagTask
from bert_tf.tokenization import FullTokenizer
from tests.tasks.classifier.test_inputs import original_features
from tests.tiny import VOCAB, tiny_config, write_vocab

EXAMPLES = [
    SwagExample("t-0", "The cat sat on the mat.", "A dog", ["runs.", "is big and red,", "sat", "Unwanted running"], 2),
    SwagExample("t-1", "Big", "the small blue dog runs on a red mat and the cat runs", ["a", "b", "c", "dog"], 0),
    SwagExample("t-2", "Café naïve", "", ["RED", "", "blue", "mat mat mat mat mat mat mat mat mat mat"], None),
]


def test_each_choice_is_packed_with_the_context_as_the_original_packs_a_pair(tmp_path):
    # Cased (the in-graph tokenizer's uncased road is the classifier's, tested there).
    do_lower_case = False
    vocab = write_vocab(tmp_path / "vocab.txt", VOCAB + ["Big", "RED", "Caf", "##é"])
    config = tiny_config(vocab_size=len(VOCAB) + 4)
    seq = 14  # short enough to truncate the longer segment of some pairs
    task = SwagTask(config, 4, vocab, do_lower_case=do_lower_case, max_seq_length=seq)
    full = FullTokenizer(vocab, do_lower_case=do_lower_case)
    batches = list(task.dataset(encode_examples(EXAMPLES), "eval", 2))
    x = {k: np.concatenate([b[0][k].numpy() for b in batches]) for k in batches[0][0]}
    y = {k: np.concatenate([b[1][k].numpy() for b in batches]) for k in batches[0][1]}
    assert x["input_word_ids"].shape == (4, 4, seq)  # 3 examples and one padding row
    for b, example in enumerate(EXAMPLES):
        for c, ending in enumerate(example.endings):
            ids, mask, types = original_features(full, example.context, f"{example.start} {ending}".strip(), seq)
            assert x["input_word_ids"][b, c].tolist() == ids, (b, c)
            assert x["input_mask"][b, c].tolist() == mask and x["input_type_ids"][b, c].tolist() == types
    assert y["label"].tolist() == [2, 0, 0, 0] and y["weight"].tolist() == [1, 1, 1, 0]


def test_the_loss_is_a_softmax_over_the_choices():
    task = SwagTask(tiny_config(), 4, max_seq_length=16)
    logits = np.array([[1.0, 2.0, 0.5, -1.0], [0.0, 0.0, 3.0, 0.0]], np.float32)
    labels = {"label": np.array([1, 3], np.int32), "weight": np.array([1.0, 1.0], np.float32)}
    sums = {k: float(v) for k, v in task.sums(labels, logits).items()}
    log_p = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert sums["loss_sum"] == pytest.approx(-(log_p[0, 1] + log_p[1, 3]), rel=1e-5)
    assert sums["correct"] == 1.0 and sums["examples"] == 2.0
    assert task.labels == ["0", "1", "2", "3"]
