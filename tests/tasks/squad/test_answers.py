"""The SQuAD answers in graph against run_squad.py's Python road on the same model: the original's
features (convert_examples_to_features) run one by one at their own length, then its predictions
(example_prediction): answers, n-best lists, probabilities, v2.0's null score differences, and the
answers' characters in the context, for contexts from no words to many windows."""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertEncoder, BertSpanLabeler
from bert_tf.preprocessing import text_preprocessing
from bert_tf.tasks.squad.answers import answer_examples
from bert_tf.tasks.squad.features import SquadExample, convert_examples_to_features
from bert_tf.tasks.squad.predictions import example_prediction
from bert_tf.tokenization import FullTokenizer
from tests.tiny import tiny_config, write_vocab

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "on", "mat", "where", "is", "?",
         "run", "##s", "##ning", "un", "##want", "##ed", ",", ".", "(", ")", "-", "cafe", "red", "1895"]
WORDS = ["the", "cat", "Cat,", "dog.", "sat", "on", "mat", "runs", "running", "unwanted", "(red)", "Café", "1895-1895",
         "zebra", "MAT", "the-cat", "is", "?"]
SEQ, QUERY, STRIDE, N_BEST, MAX_ANSWER = 20, 5, 4, 5, 4


def _context(rng, words):
    separators = [" ", " ", " ", "  ", "\n", "\u202f", "\t"]
    return "".join(rng.choice(WORDS) + rng.choice(separators) for _ in range(words)).strip(" ")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    vocab = write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", VOCAB)
    keras.utils.set_random_seed(3)
    config = tiny_config(vocab_size=len(VOCAB), max_position_embeddings=SEQ)
    model = BertSpanLabeler(BertEncoder.from_bert_config(config))
    tokenizer, packer = text_preprocessing(vocab, True, SEQ, len(VOCAB))
    return vocab, model, tokenizer, packer


def _original(model, vocab, questions, contexts, v2):
    """run_squad.py's Python road: (answer, n-best, score diff) per example."""
    examples = [SquadExample(i, q, c.replace("\u202f", " ").split()) for i, (q, c) in
                enumerate(zip(questions, contexts, strict=True))]
    features = list(convert_examples_to_features(examples, FullTokenizer(vocab, True), SEQ, STRIDE, QUERY, False))
    by_example = {i: [] for i in range(len(examples))}
    for f in features:
        used = sum(f.input_mask)
        inputs = {"input_word_ids": np.array([f.input_ids[:used]], np.int32),
                  "input_mask": np.array([f.input_mask[:used]], np.int32),
                  "input_type_ids": np.array([f.segment_ids[:used]], np.int32)}
        out = model(inputs, training=False)
        by_example[f.example_index].append((f, out["start_logits"][0].numpy(), out["end_logits"][0].numpy()))
    return [example_prediction(e, by_example[i], N_BEST, MAX_ANSWER, True, v2, 0.0)
            for i, e in enumerate(examples)]


@pytest.mark.parametrize("v2", [False, True])
def test_answers_and_nbest_lists_are_run_squads_at_any_length(setup, v2):
    vocab, model, tokenizer, packer = setup
    rng = random.Random(1 + v2)
    lengths = [0, 1, 3, 9, 14, 40, 120] + [rng.randrange(1, 60) for _ in range(9)]
    contexts = [_context(rng, n) for n in lengths]
    questions = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 8))) for _ in lengths]
    out = answer_examples(tokenizer, packer, lambda inputs: model(inputs, training=False),
                          tf.constant(tokenizer.vocabulary), tf.constant(questions), tf.constant(contexts), QUERY,
                          STRIDE, N_BEST, MAX_ANSWER, v2)
    expected = _original(model, vocab, questions, contexts, v2)
    for i, (text, nbest, diff) in enumerate(expected):
        assert out["answer"][i].numpy().decode() == text, (i, contexts[i])
        size = int(out["nbest_size"][i])
        assert [t.decode() for t in out["nbest_text"][i, :size].numpy()] == [e["text"] for e in nbest], i
        np.testing.assert_allclose(out["nbest_probability"][i, :size], [e["probability"] for e in nbest], atol=1e-5)
        np.testing.assert_allclose(out["nbest_start_logit"][i, :size], [e["start_logit"] for e in nbest], atol=1e-5)
        if v2:
            assert float(out["null_score_diff"][i]) == pytest.approx(diff, abs=1e-4)
        # The answer's characters in the context: the text itself where its words are one space apart.
        start, end = int(out["start_char"][i]), int(out["end_char"][i])
        if text in ("", "empty") and start < 0:
            continue
        assert start >= 0 and end > start
        found = contexts[i][start:end]
        assert " ".join(found.replace("\u202f", " ").split()) == text, (i, found, text)


def test_a_context_of_one_word_repeated_gives_run_squads_nbest_list(setup):
    """Most spans project to the same few texts: the texts are projected for more and more of the
    best spans until n_best_size distinct ones are found, as the Python rule walks its list."""
    vocab, model, tokenizer, packer = setup
    contexts = ["cat " * 90, "the cat sat " * 30 + "mat", "cat"]
    questions = ["where is the cat ?"] * len(contexts)
    out = answer_examples(tokenizer, packer, lambda inputs: model(inputs, training=False),
                          tf.constant(tokenizer.vocabulary), tf.constant(questions), tf.constant(contexts), QUERY,
                          STRIDE, N_BEST, MAX_ANSWER, False)
    for i, (text, nbest, _) in enumerate(_original(model, vocab, questions, contexts, False)):
        assert out["answer"][i].numpy().decode() == text
        size = int(out["nbest_size"][i])
        assert [t.decode() for t in out["nbest_text"][i, :size].numpy()] == [e["text"] for e in nbest], i
