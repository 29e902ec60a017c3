"""conlleval's entity rules and figures on hand-worked cases."""

import pytest

from bert_tf.tasks.ner.conlleval import Counts, entities, evaluate, is_valid_tag, split_tag


@pytest.mark.parametrize(
    "tags, expected",
    [
        # IOB2: every entity opens with B-.
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),
        # IOB1: I- opens an entity after O; B- only splits two adjacent entities of one type.
        (["I-PER", "I-PER", "B-PER", "O", "I-LOC"], [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5)]),
        # I- after O starts a chunk, also at the start of a sentence.
        (["O", "I-ORG", "I-ORG"], [("ORG", 1, 3)]),
        (["I-ORG"], [("ORG", 0, 1)]),
        # A change of type inside I- tags ends one entity and starts another.
        (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 1), ("LOC", 1, 3)]),
        # B- after B- of the same type: two one-word entities.
        (["B-MISC", "B-MISC"], [("MISC", 0, 1), ("MISC", 1, 2)]),
        # IOBES: S- is a one-word entity, E- closes, E- after O opens (and closes) one.
        (
            ["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "E-ORG", "I-ORG"],
            [("PER", 0, 1), ("LOC", 1, 4), ("ORG", 5, 6), ("ORG", 6, 7)],
        ),
        (["O", "O"], []),
        ([], []),
        # The type is everything after the first '-'.
        (["B-A-B", "I-A-B"], [("A-B", 0, 2)]),
    ],
)
def test_entities_follow_conllevals_start_and_end_rules(tags, expected):
    assert entities(tags) == expected


def test_split_and_validate_tags():
    assert split_tag("B-PER") == ("B", "PER") and split_tag("O") == ("O", "")
    assert all(is_valid_tag(t) for t in ("O", "B-PER", "I-LOC", "E-X", "S-Y"))
    assert not any(is_valid_tag(t) for t in ("PER", "B-", "X-PER", "o", "", "B"))


def test_figures_of_a_hand_worked_example():
    # Sentence 1: gold PER(0,2) LOC(3,4); predicted PER(0,2) ORG(3,4): one of two right.
    # Sentence 2 (IOB1 gold, IOB2 prediction of the same entities): ORG(0,2) ORG(2,3) right;
    #   gold LOC(4,6) predicted as LOC(4,5): a boundary off, wrong; predicted MISC(6,7) spurious.
    gold = [
        ["B-PER", "I-PER", "O", "B-LOC"],
        ["I-ORG", "I-ORG", "B-ORG", "O", "I-LOC", "I-LOC", "O"],
    ]
    predicted = [
        ["B-PER", "I-PER", "O", "B-ORG"],
        ["B-ORG", "I-ORG", "B-ORG", "O", "B-LOC", "O", "B-MISC"],
    ]
    report = evaluate(gold, predicted)
    # gold: PER, LOC, ORG, ORG, LOC = 5; predicted: PER, ORG, ORG, ORG, LOC, MISC = 6; correct:
    # PER, ORG, ORG = 3.
    assert (report.overall.gold, report.overall.predicted, report.overall.correct) == (5, 6, 3)
    assert report.overall.precision == pytest.approx(3 / 6)
    assert report.overall.recall == pytest.approx(3 / 5)
    assert report.overall.f1 == pytest.approx(2 * 0.5 * 0.6 / 1.1)
    assert list(report.by_type) == ["LOC", "MISC", "ORG", "PER"]
    assert report.by_type["LOC"] == Counts(gold=2, predicted=1, correct=0)
    assert report.by_type["MISC"] == Counts(gold=0, predicted=1, correct=0)
    assert report.by_type["ORG"] == Counts(gold=2, predicted=3, correct=2)
    assert report.by_type["PER"] == Counts(gold=1, predicted=1, correct=1)
    assert report.by_type["ORG"].precision == pytest.approx(2 / 3) and report.by_type["ORG"].recall == 1.0
    assert report.by_type["ORG"].f1 == pytest.approx(0.8)
    # 0/0 is 0, as conlleval prints it.
    assert report.by_type["MISC"].recall == 0.0 and report.by_type["MISC"].f1 == 0.0
    # Tag accuracy: equal tags, word by word (I-ORG vs B-ORG differ): 3 of 4, then 3 of 7.
    assert (report.tokens, report.correct_tags) == (11, 6)
    assert report.accuracy == pytest.approx(6 / 11)

    figures = report.as_dict("eval_")
    assert figures["eval_f1"] == pytest.approx(report.overall.f1)
    assert figures["eval_ORG_precision"] == pytest.approx(2 / 3) and figures["eval_LOC_gold"] == 2
    assert figures["eval_correct_entities"] == 3 and figures["eval_accuracy"] == pytest.approx(6 / 11)
    table = report.table().splitlines()
    assert table[0] == "processed 11 tokens with 5 phrases; found: 6 phrases; correct: 3."
    assert table[1] == "accuracy:  54.55%; precision:  50.00%; recall:  60.00%; FB1:  54.55"
    assert table[4] == "              ORG: precision:  66.67%; recall: 100.00%; FB1:  80.00  3"


def test_iob1_and_iob2_of_the_same_entities_score_alike_and_sentences_do_not_join():
    iob1 = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC"], ["I-LOC"]]
    iob2 = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"], ["B-LOC"]]
    assert evaluate(iob1, iob2).overall == Counts(gold=4, predicted=4, correct=4)
    # Without the boundary the last LOC would continue the previous sentence's.
    joined = evaluate([iob1[0] + iob1[1]], [iob2[0] + iob2[1]]).overall
    assert joined == Counts(gold=3, predicted=4, correct=2)


def test_nothing_predicted_and_length_mismatches():
    report = evaluate([["B-PER", "O"]], [["O", "O"]])
    assert report.overall == Counts(gold=1, predicted=0, correct=0)
    assert report.overall.precision == 0.0 and report.overall.f1 == 0.0
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        evaluate([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="1 gold sentences but 2 predicted"):
        evaluate([["O"]], [["O"], ["O"]])
