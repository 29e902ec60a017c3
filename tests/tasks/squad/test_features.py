"""SQuAD pre-processing against the original run_squad.py's procedure (restated step for step in
tests/original_squad.py), on paragraphs built to hit its corner cases; the streaming JSON
reader; the errors."""

import json
import random
import re

import pytest

from bert_tf.tasks.squad import features as squad
from bert_tf.tasks.squad.json_reader import iter_squad_articles
from bert_tf.tokenization import FullTokenizer
from tests.original_squad import OriginalExample, original_examples, original_features

# Whitespace words: punctuation glued on, accents, CJK, a no-break space inside a word (not a
# word separator for the original), a word outside the vocab.
WORDS = ["the", "cat", "sat", "on", "mat,", "(1895-1943).", "Japanese", "it's", "café", "naïve", "Über",
         "我们喜欢", "中文", "running", "unwanted", "co-op", "U.S.A.", "10\u00a0km", "x", "blue.", '"quoted"',
         "zzyzx", "the", "cat", "on"]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\u202f", " \n\t", "\r\n"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", ",", "(", "1895", "-", "1943", ")",
         ".", "japan", "##ese", "it", "'", "s", "cafe", "naive", "uber", "我", "们", "喜", "欢", "中", "文", "run",
         "##ning", "un", "##want", "##ed", "co", "op", "u", "a", "10", "km", "x", "blue", '"', "quoted"]


# ---- Data.

def make_squad(rng, paragraphs, version_2):
    """Paragraphs of 1-45 words with irregular whitespace; answers on word boundaries, inside a
    word (a "Japan" in "Japanese"), across separators, or not in the text (skipped in training)."""
    articles, qid = [], 0
    for a in range(paragraphs // 3):
        article = {"title": f"t{a}", "paragraphs": []}
        for _ in range(3):
            words = [rng.choice(WORDS) for _ in range(rng.randint(1, 45))]
            context, starts = rng.choice(["", " ", "\n"]), []
            for i, word in enumerate(words):
                starts.append(len(context))
                context += word + (rng.choice(SEPARATORS) if i < len(words) - 1 else rng.choice(["", " "]))
            qas = []
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(words))
                j = min(len(words) - 1, i + rng.choice([0, 0, 1, 2, 5]))
                begin, stop = starts[i], starts[j] + len(words[j])
                if rng.random() < 0.2 and stop - begin > 2:
                    begin, stop = begin + rng.choice([0, 1]), stop - 1
                text = context[begin:stop]
                if rng.random() < 0.05 and len(text) > 2:
                    text = "qq" + text[2:]
                question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) + "?"
                qa = {"id": f"q{qid}", "question": question, "answers": [{"text": text, "answer_start": begin}]}
                if version_2:
                    qa["is_impossible"] = rng.random() < 0.3
                    if qa["is_impossible"]:
                        qa["plausible_answers"], qa["answers"] = qa["answers"], []
                qas.append(qa)
                qid += 1
            article["paragraphs"].append({"context": context, "qas": qas})
        articles.append(article)
    return {"version": "v2.0" if version_2 else "1.1", "data": articles}


def dump(tmp_path, data, name="squad.json", **kwargs):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, **kwargs), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return FullTokenizer(str(path), do_lower_case=True)


def as_tuple(feature):
    return tuple(getattr(feature, name) for name in (
        "unique_id", "example_index", "doc_span_index", "tokens", "token_to_orig_map", "token_is_max_context",
        "input_ids", "input_mask", "segment_ids", "start_position", "end_position", "is_impossible"))


@pytest.mark.parametrize("version_2", [False, True], ids=["v1.1", "v2.0"])
@pytest.mark.parametrize("is_training", [True, False], ids=["train", "predict"])
@pytest.mark.parametrize("lengths", [(32, 8, 10), (24, 5, 6), (40, 128, 12)],
                         ids=lambda x: "seq{}-stride{}-q{}".format(*x))
def test_examples_and_features_are_the_originals(tmp_path, tokenizer, version_2, is_training, lengths):
    seq, stride, query = lengths
    path = dump(tmp_path, make_squad(random.Random(f"{version_2}{lengths}"), 30, version_2), ensure_ascii=False)
    stats = {}
    examples = list(squad.read_squad_examples(path, is_training, version_2, stats))
    expected_examples = original_examples(path, is_training, version_2)
    got = [(e.qas_id, e.question_text, e.doc_tokens, e.orig_answer_text, e.start_position, e.end_position,
            e.is_impossible) for e in examples]
    assert got == expected_examples
    features = [as_tuple(f) for f in squad.convert_examples_to_features(examples, tokenizer, seq, stride, query,
                                                                         is_training)]
    expected = list(original_features(expected_examples, tokenizer, seq, stride, query, is_training))
    assert features == expected

    # The data reaches the corners it is made for.
    assert stats["questions"] == len(examples) + stats["skipped_answer_mismatch"]
    assert (stats["skipped_answer_mismatch"] > 0) == is_training
    assert any(len(e.question_text.split()) > query for e in examples)  # queries cut
    assert max(f[2] for f in features) >= 3  # several spans per paragraph
    if is_training:
        answers = [f for f in features if f[9] and not f[11]]
        assert any(f[9] == 0 and not f[11] for f in features)  # out of span, kept
        assert any(f[9] == f[3].index("[SEP]") + 1 for f in answers)  # answer at the span's start
        assert any(f[10] == len(f[3]) - 2 for f in answers)  # answer at the span's end
        assert (stats["impossible"] > 0) == version_2
    for f in features:
        assert len(f[6]) == len(f[7]) == len(f[8]) == seq


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_words_and_questions_tokenize_as_the_tokenizer(tmp_path, monkeypatch, do_lower_case):
    """Questions and answers are tokenized word by word from a cache: check texts with the
    characters where that could differ (separators the tokenizer deletes or keeps, controls,
    never-split tokens, CJK, accents, ASCII punctuation and case), with a cache small enough
    to turn over many times."""
    monkeypatch.setattr(squad, "_WORD_CACHE_SIZE", 7)
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB + ["[MASK]", "The", "Cat", "U", "A"]) + "\n", encoding="utf-8")
    tokenizer = FullTokenizer(str(path), do_lower_case=do_lower_case, never_split=["[MASK]"])
    alphabet = list("aTtheC cat.,-'(\"!~") + ["[MASK]", "\x0b", "\x0c", "\x1f", "\x85", "\u2028", "\xa0", "\t", "\n",
                                               "\u202f", "é", "Ü", "中", "\u200b", "\x00", "\ufffd", "\x7f", "U.S.A."]
    rng = random.Random(do_lower_case)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(400)]
    words = [[w for w in re.split("[ \t\r\n\u202f]", text) if w] for text in texts]  # the original's split
    examples = [squad.SquadExample(f"q{i}", text, words[i - 1]) for i, text in enumerate(texts)]
    features = [as_tuple(f) for f in squad.convert_examples_to_features(examples, tokenizer, 40, 8, 30, False)]
    originals = [OriginalExample(e.qas_id, e.question_text, e.doc_tokens, None, None, None, False) for e in examples]
    expected = list(original_features(originals, tokenizer, 40, 8, 30, False))
    assert features == expected


def test_paragraph_split_and_answer_span_by_hand(tmp_path, tokenizer):
    context = " The\tcat  sat\u202fon\u00a0the\n(1895-1943). Japanese"
    qas = [{"id": "a", "question": "year?", "answers": [{"text": "1895", "answer_start": context.index("1895")}]},
           {"id": "b", "question": "who?", "answers": [{"text": "Japan", "answer_start": context.index("Japan")}]}]
    path = dump(tmp_path, {"data": [{"paragraphs": [{"context": context, "qas": qas}]}]})
    first, second = squad.read_squad_examples(path, True, False)
    assert first.doc_tokens == ["The", "cat", "sat", "on\u00a0the", "(1895-1943).", "Japanese"]
    assert second.doc_tokens is first.doc_tokens  # one list per paragraph
    assert (first.start_position, first.end_position, second.start_position) == (4, 4, 5)
    a, b = squad.convert_examples_to_features([first, second], tokenizer, 32, 8, 10, True)
    assert a.tokens[a.start_position : a.end_position + 1] == ["1895"]  # narrowed inside "(1895-1943)."
    assert b.tokens[b.start_position : b.end_position + 1] == ["japan"]  # narrowed to the word piece
    assert a.tokens == ["[CLS]", "[UNK]", "[UNK]", "[SEP]", "the", "cat", "sat", "on", "the", "(", "1895", "-",
                        "1943", ")", ".", "japan", "##ese", "[SEP]"]
    assert a.token_to_orig_map == {4: 0, 5: 1, 6: 2, 7: 3, 8: 3, 9: 4, 10: 4, 11: 4, 12: 4, 13: 4, 14: 4, 15: 5, 16: 5}


def test_max_context_prefers_the_centred_span_and_the_first_on_ties(tmp_path, tokenizer):
    # 12 doc tokens, 4 per span, stride 2: spans start at 0, 2, 4, 6, 8.
    path = dump(tmp_path, {"data": [{"paragraphs": [{"context": " ".join(["cat"] * 12), "qas": [
        {"id": "a", "question": "x", "answers": [{"text": "cat", "answer_start": 0}]}]}]}]})
    features = list(squad.convert_examples_to_features(squad.read_squad_examples(path, False, False), tokenizer,
                                                       4 + 4, 2, 1, False))
    # Token 2 is at left 2 / right 1 in span 0 (score 1.04), left 0 in span 1: span 0 wins.
    # Token 3: span 0 scores 0.04, span 1 1.04. Token 1: only span 0.
    flags = [[f.token_is_max_context[p] for p in range(3, 7)] for f in features]
    assert flags == [[True, True, True, False], [False, True, True, False], [False, True, True, False],
                     [False, True, True, False], [False, True, True, True]]


def test_streaming_reader_across_tiny_chunks(tmp_path):
    data = make_squad(random.Random(1), 9, True)
    data = {"version": "x", "extra": [1, {"a": "}]"}], "data": data["data"], "more": 1.5e3}
    path = dump(tmp_path, data, ensure_ascii=False, indent=1)
    for chunk in (1, 7, 1 << 20):
        assert list(iter_squad_articles(path, chunk_bytes=chunk)) == data["data"]
    assert list(iter_squad_articles(dump(tmp_path, '\ufeff{"data": []}'))) == []


def test_malformed_json_names_line_and_column(tmp_path):
    text = '{"version": "1.1",\n "data": [\n  {"paragraphs": []},\n  {"paragraphs": [}\n ]}'
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    where = f"line {expected.value.lineno} column {expected.value.colno}"
    path = dump(tmp_path, text)
    for chunk in (3, 1 << 20):
        with pytest.raises(ValueError, match=f"squad.json is not valid JSON: .* at {where}$"):
            list(iter_squad_articles(path, chunk_bytes=chunk))
    with pytest.raises(ValueError, match="not valid JSON: extra data .* line 1 column 14"):
        list(squad.read_squad_examples(dump(tmp_path, '{"data": []} x'), False, False))


def _valid():
    return {"data": [{"paragraphs": [{"context": "the cat sat", "qas": [
        {"id": "q7", "question": "who?", "answers": [{"text": "cat", "answer_start": 4}]}]}]}]}


@pytest.mark.parametrize("path_to_field, message", [
    ((0, "paragraphs"), "article 0 has no 'paragraphs'"),
    ((0, 0, "context"), "article 0 paragraph 0 has no 'context'"),
    ((0, 0, "qas"), "article 0 paragraph 0 has no 'qas'"),
    ((0, 0, 0, "id"), "article 0 paragraph 0 question 0 has no 'id'"),
    ((0, 0, 0, "question"), "question 'q7' has no 'question'"),
    ((0, 0, 0, "answers"), "question 'q7' has no 'answers'"),
    ((0, 0, 0, 0, "answer_start"), "question 'q7' answer 0 has no 'answer_start'"),
    ((0, 0, 0, 0, "text"), "question 'q7' answer 0 has no 'text'"),
])
def test_missing_field(tmp_path, path_to_field, message):
    data = _valid()
    node = data["data"][path_to_field[0]]
    for key, step in zip(("paragraphs", "qas", "answers"), path_to_field[1:-1], strict=False):
        node = node[key][step]
    del node[path_to_field[-1]]
    with pytest.raises(ValueError, match=f"squad.json: {message}"):
        list(squad.read_squad_examples(dump(tmp_path, data), True, False))


def _with_qa(**changes):
    data = _valid()
    data["data"][0]["paragraphs"][0]["qas"][0].update(changes)
    return data


@pytest.mark.parametrize("data, is_training, v2, message", [
    (_with_qa(answers=[{"text": "sat", "answer_start": 9}]), True, False,
     "question 'q7': answer_start 9 with text of length 3 is outside the context of length 11"),
    (_with_qa(answers=[{"text": "the", "answer_start": -1}]), True, False, "answer_start -1 .* outside the context"),
    (_with_qa(is_impossible=True, answers=[]), True, False, "'q7' is marked is_impossible .*--version_2_with_negative"),
    (_with_qa(is_impossible=True), False, False, "'q7' is marked is_impossible .*--version_2_with_negative"),
    (_with_qa(answers=[]), True, False, "'q7' has no answer .*pass --version_2_with_negative"),
    (_with_qa(answers=[{"text": "cat", "answer_start": 4}] * 2), True, False, "'q7' has 2 answers: .*exactly 1"),
    (_with_qa(answers=[], is_impossible=False), True, True, "'q7' has 0 answers: .*exactly 1"),
    ('{"version": "1.1"}', False, False, 'squad.json is not a SQuAD file: no "data" list'),
    ('{"data": {"a": 1}}', False, False, 'squad.json is not a SQuAD file: "data" is not a list'),
    ("[1, 2]", False, False, "squad.json is not a SQuAD file"),
    ('{"data": [{"paragraphs": []}', False, False,
     "squad.json is not valid JSON: expected ',' or ']', found 'the end of the file' at line 1 column 29"),
    ('{"data": [{"paragraphs": [{"context": "ab', False, False, "not valid JSON: Unterminated string .* column 39"),
    ("", False, False, "squad.json is empty"),
    (" \n", False, False, "squad.json is empty"),
])
def test_bad_data(tmp_path, data, is_training, v2, message):
    with pytest.raises(ValueError, match=message):
        list(squad.read_squad_examples(dump(tmp_path, data), is_training, v2))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="SQuAD file .*nothing.json does not exist"):
        list(squad.read_squad_examples(str(tmp_path / "nothing.json"), True, False))


def test_not_utf8(tmp_path):
    path = tmp_path / "squad.json"
    path.write_bytes(b'{"data": [{"paragraphs": [{"context": "caf\xe9", "qas": []}]}]}')
    with pytest.raises(ValueError, match="squad.json is not UTF-8 text"):
        list(squad.read_squad_examples(str(path), False, False))


def test_v2_in_both_modes(tmp_path):
    path = dump(tmp_path, _with_qa(is_impossible=True, answers=[]))
    (train,) = squad.read_squad_examples(path, True, True)
    (predict,) = squad.read_squad_examples(path, False, True)
    assert (train.orig_answer_text, train.start_position, train.end_position, train.is_impossible) == ("", -1, -1, True)
    # As the original: prediction examples carry no answer, and is_impossible is read for training only.
    assert (predict.orig_answer_text, predict.start_position, predict.is_impossible) == (None, None, False)


def test_lengths_are_checked(tokenizer):
    with pytest.raises(ValueError, match="max_seq_length 13 must be greater than max_query_length 10"):
        list(squad.convert_examples_to_features([], tokenizer, 13, 8, 10, False))
