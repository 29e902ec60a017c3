import os
import re

import pytest

from bert_tf.tasks.classifier import processors
from bert_tf.tasks.classifier.catalog import create_processor, processor_for_tfds, task_names
from bert_tf.tasks.classifier.processors import DataProcessor, InputExample, TsvFile, TsvTask, register_task

E = InputExample


def _write(directory, name, rows):
    """Writes rows (lists of cells) as a TSV file; returns its path as a string."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the registry, so a test's registrations do not leak."""
    monkeypatch.setattr(processors, "TASKS", dict(processors.TASKS))


# ---------------------------------------------------------------------------------------------
# The original's four tasks.


def test_cola_train_has_no_header_and_test_has_one(tmp_path):
    _write(
        tmp_path,
        "train.tsv",
        [
            ["src1", "1", "", "The cat sat on the warm mat."],
            ["src2", "0", "*", "Mat the on sat cat."],
        ],
    )
    _write(tmp_path, "dev.tsv", [["src3", "1", "", "Birds fly south."]])
    _write(tmp_path, "test.tsv", [["index", "sentence"], ["0", "A bird sang."], ["1", "Sang a."]])
    cola = create_processor("cola")
    assert cola.get_labels() == ["0", "1"]
    assert cola.submission_name == "CoLA"
    assert cola.get_train_examples(tmp_path) == [
        E("train-0", "The cat sat on the warm mat.", None, "1"),
        E("train-1", "Mat the on sat cat.", None, "0"),
    ]
    assert cola.get_dev_examples(tmp_path) == [E("dev-0", "Birds fly south.", None, "1")]
    # The original's placeholder label "0" on test rows; guids count the header line.
    assert cola.get_test_examples(tmp_path) == [
        E("test-1", "A bird sang.", None, "0", index="0"),
        E("test-2", "Sang a.", None, "0", index="1"),
    ]


def _mnli_row(index, premise, hypothesis, *labels):
    parses = ["( a )", "( b )", "(S a)", "(S b)"]
    return [index, "p" + index, index + "e", "fiction", *parses, premise, hypothesis, *labels]


_MNLI_HEADER = _mnli_row("index", "sentence1", "sentence2")


def _write_mnli(tmp_path):
    _write(
        tmp_path,
        "train.tsv",
        [
            _MNLI_HEADER + ["label1", "gold_label"],  # 12 columns
            _mnli_row("7", "A man reads a book.", "A person is reading.", "neutral", "entailment"),
        ],
    )
    dev_header = _MNLI_HEADER + [f"label{i}" for i in range(1, 6)] + ["gold_label"]  # 16
    _write(
        tmp_path,
        "dev_matched.tsv",
        [
            dev_header,
            _mnli_row("3", "Rain fell all day.", "It was dry.", *["neutral"] * 5, "contradiction"),
        ],
    )
    _write(
        tmp_path,
        "dev_mismatched.tsv",
        [
            dev_header,
            _mnli_row("4", "The shop sells tea.", "Tea is sold.", *["entailment"] * 6),
        ],
    )
    _write(tmp_path, "test_matched.tsv", [_MNLI_HEADER, _mnli_row("0", "Snow.", "Cold.")])  # 10
    _write(tmp_path, "test_mismatched.tsv", [_MNLI_HEADER, _mnli_row("9", "Sun.", "Warm.")])


def test_mnli_reads_12_16_and_10_column_files_and_the_mismatched_extras(tmp_path):
    _write_mnli(tmp_path)
    mnli = create_processor("mnli")
    assert mnli.get_labels() == ["contradiction", "entailment", "neutral"]
    assert mnli.submission_name == "MNLI-m"
    assert mnli.get_train_examples(tmp_path) == [
        E("train-7", "A man reads a book.", "A person is reading.", "entailment")
    ]
    assert mnli.get_dev_examples(tmp_path) == [
        E("dev_matched-3", "Rain fell all day.", "It was dry.", "contradiction")
    ]
    assert mnli.get_test_examples(tmp_path) == [
        E("test-0", "Snow.", "Cold.", "contradiction", index="0")
    ]
    assert mnli.get_extra_dev_examples(tmp_path) == {
        "mismatched": [E("dev_mismatched-4", "The shop sells tea.", "Tea is sold.", "entailment")]
    }
    assert mnli.get_extra_test_examples(tmp_path) == {
        "mismatched": ("MNLI-mm", [E("test_mismatched-9", "Sun.", "Warm.", "contradiction", "9")])
    }

    # The original reads only the matched sets: without the mismatched files there is no extra.
    for name in ("dev_mismatched.tsv", "test_mismatched.tsv"):
        (tmp_path / name).rename(tmp_path / f"{name}.away")
    assert mnli.get_extra_dev_examples(tmp_path) == {} and mnli.get_extra_test_examples(tmp_path) == {}
    for name in ("dev_mismatched.tsv", "test_mismatched.tsv"):
        (tmp_path / f"{name}.away").rename(tmp_path / name)

    mm = create_processor("MNLI-MM")
    assert mm.submission_name == "MNLI-mm"
    assert mm.get_dev_examples(tmp_path) == [
        E("dev_mismatched-4", "The shop sells tea.", "Tea is sold.", "entailment")
    ]
    assert mm.get_test_examples(tmp_path) == [E("test-9", "Sun.", "Warm.", "contradiction", "9")]
    assert mm.get_extra_dev_examples(tmp_path) == {}
    assert mm.get_extra_test_examples(tmp_path) == {}


def test_mrpc_columns(tmp_path):
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    _write(
        tmp_path,
        "train.tsv",
        [
            header,
            ["1", "101", "102", "The vote was held on Monday.", "On Monday they voted."],
            ["0", "103", "104", "Prices rose.", "The team lost."],
        ],
    )
    _write(
        tmp_path,
        "test.tsv",
        [
            ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
            ["5", "201", "202", "He left early.", "He departed soon."],
        ],
    )
    mrpc = create_processor("mrpc")
    assert mrpc.get_train_examples(tmp_path) == [
        E("train-1", "The vote was held on Monday.", "On Monday they voted.", "1"),
        E("train-2", "Prices rose.", "The team lost.", "0"),
    ]
    assert mrpc.get_test_examples(tmp_path) == [
        E("test-1", "He left early.", "He departed soon.", "0", index="5")
    ]


def _xnli_row(language, label, premise, hypothesis, pair_id):
    parses = ["( p )", "( h )", "(S p)", "(S h)"]
    return [
        language,
        label,
        *parses,
        premise,
        hypothesis,
        "1",
        pair_id,
        "travel",
        label,
        "",
        "",
        "",
        "",
    ]


def _write_xnli(tmp_path):
    _write(
        tmp_path,
        "multinli/multinli.train.de.tsv",
        [
            ["premise", "hypo", "label"],
            ["Der Hund schläft.", "Ein Tier ruht.", "entailment"],
            ["Es regnet.", "Die Sonne scheint.", "contradictory"],
        ],
    )
    header = _xnli_row("language", "gold_label", "sentence1", "sentence2", "pairID")
    for name in ("xnli.dev.tsv", "xnli.test.tsv"):
        _write(
            tmp_path,
            name,
            [
                header,
                _xnli_row("en", "neutral", "A boat sails.", "It is windy.", "1"),
                _xnli_row("de", "neutral", "Ein Boot segelt.", "Es ist windig.", "1"),
                _xnli_row("zh", "neutral", "一艘船在航行。", "有风。", "1"),
                _xnli_row("de", "entailment", "Sie lacht.", "Sie ist froh.", "2"),
            ],
        )


def test_xnli_language_filter_and_contradictory(tmp_path):
    _write_xnli(tmp_path)
    xnli = create_processor("xnli", xnli_language="de")
    assert xnli.get_train_examples(tmp_path) == [
        E("train-1", "Der Hund schläft.", "Ein Tier ruht.", "entailment"),
        E("train-2", "Es regnet.", "Die Sonne scheint.", "contradiction"),
    ]
    # guids count every line, other languages' too, as the original's.
    assert xnli.get_dev_examples(tmp_path) == [
        E("dev-2", "Ein Boot segelt.", "Es ist windig.", "neutral"),
        E("dev-4", "Sie lacht.", "Sie ist froh.", "entailment"),
    ]
    assert [e.guid for e in xnli.get_test_examples(tmp_path)] == ["test-2", "test-4"]
    assert create_processor("xnli").get_dev_examples(tmp_path) == [
        E("dev-3", "一艘船在航行。", "有风。", "neutral")  # the original's default language: zh
    ]


def test_rest_of_glue_layouts(tmp_path):
    sst = tmp_path / "SST-2"
    _write(sst, "train.tsv", [["sentence", "label"], ["a gentle , funny film ", "1"]])
    _write(sst, "test.tsv", [["index", "sentence"], ["0", "slow and dull"]])
    p = create_processor("sst-2")
    assert p.get_train_examples(sst) == [E("train-1", "a gentle , funny film ", None, "1")]
    assert p.get_test_examples(sst) == [E("test-1", "slow and dull", None, None, "0")]

    sts = tmp_path / "STS-B"
    meta = ["main-captions", "MSRvid", "2012test", "0001", "none", "none"]
    header = ["index", "genre", "filename", "year", "old_index", "source1", "source2"]
    _write(
        sts,
        "train.tsv",
        [
            header + ["sentence1", "sentence2", "score"],
            ["0", *meta, "A girl plays a flute.", "A child plays music.", "3.800"],
        ],
    )
    _write(sts, "test.tsv", [header + ["sentence1", "sentence2"], ["4", *meta, "Hi.", "Hello."]])
    p = create_processor("STS-B")
    assert (p.label_kind, p.get_labels(), p.submission_name) == ("regression", [], "STS-B")
    assert p.get_train_examples(sts) == [
        E("train-1", "A girl plays a flute.", "A child plays music.", "3.800")
    ]
    assert p.get_test_examples(sts) == [E("test-1", "Hi.", "Hello.", None, "4")]

    qqp = tmp_path / "QQP"
    _write(
        qqp,
        "train.tsv",
        [
            ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
            ["5", "11", "12", "How do I bake bread?", "What is a way to bake bread?", "1"],
        ],
    )
    _write(qqp, "test.tsv", [["id", "question1", "question2"], ["0", "Why?", "How come?"]])
    p = create_processor("qqp")
    assert p.get_train_examples(qqp) == [
        E("train-1", "How do I bake bread?", "What is a way to bake bread?", "1")
    ]
    assert p.get_test_examples(qqp) == [E("test-1", "Why?", "How come?", None, "0")]

    for task, label in [("qnli", "entailment"), ("rte", "not_entailment"), ("wnli", "1")]:
        d = tmp_path / task
        _write(d, "dev.tsv", [["index", "a", "b", "label"], ["2", "First.", "Second.", label]])
        _write(d, "test.tsv", [["index", "a", "b"], ["8", "One.", "Two."]])
        p = create_processor(task)
        assert p.get_dev_examples(d) == [E("dev-1", "First.", "Second.", label)]
        assert p.get_test_examples(d) == [E("test-1", "One.", "Two.", None, "8")]
        assert p.submission_name == task.upper()


def test_multilabel(tmp_path):
    labels_file = tmp_path / "labels.txt"
    labels_file.write_text("sports\n\npolitics\n science \n", encoding="utf-8")
    _write(
        tmp_path,
        "train.tsv",
        [
            ["labels", "id", "text", "source"],  # any order; "text" for text_a; others ignored
            ["sports, politics", "a7", "The minister opened the stadium.", "web"],
            ["", "a8", "Nothing happened today.", "web"],
            [" science ,", "a9", "Cells divide.", "lab"],
        ],
    )
    _write(tmp_path, "test.tsv", [["text_a", "text_b"], ["Is it raining?", "Take a coat."]])
    p = create_processor("multilabel", labels_file=str(labels_file))
    assert (p.label_kind, p.get_labels()) == ("multi", ["sports", "politics", "science"])
    assert p.get_train_examples(tmp_path) == [
        E("train-1", "The minister opened the stadium.", None, ["sports", "politics"], "a7"),
        E("train-2", "Nothing happened today.", None, [], "a8"),
        E("train-3", "Cells divide.", None, ["science"], "a9"),
    ]
    assert p.get_test_examples(tmp_path) == [E("test-1", "Is it raining?", "Take a coat.")]


def test_a_long_document_is_not_a_csv_field_limit_error(tmp_path):
    text = "word " * 60_000  # 300 kB, over csv's default 128 KiB field limit
    _write(tmp_path, "train.tsv", [["sentence", "label"], [text, "0"]])
    assert create_processor("sst-2").get_train_examples(tmp_path)[0].text_a == text


# ---------------------------------------------------------------------------------------------
# Bad input: every error names the file and, for a row, its 1-based line.


def _raises(exc, *fragments):
    return pytest.raises(exc, match="(?s)" + ".*".join(re.escape(f) for f in fragments))


def test_missing_file_names_task_file_and_data_dir(tmp_path):
    with _raises(FileNotFoundError, "mrpc", "'dev.tsv'", str(tmp_path)):
        create_processor("mrpc").get_dev_examples(str(tmp_path))
    with _raises(FileNotFoundError, "multinli.train.fr.tsv", "--xnli_language=fr"):
        create_processor("xnli", xnli_language="fr").get_train_examples(str(tmp_path))


def test_empty_and_header_only_files(tmp_path):
    path = _write(tmp_path, "train.tsv", [])
    with _raises(ValueError, path, "no examples"):
        create_processor("mrpc").get_train_examples(tmp_path)
    path = _write(tmp_path, "dev.tsv", [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]])
    with _raises(ValueError, path, "no examples"):
        create_processor("mrpc").get_dev_examples(tmp_path)


def test_xnli_language_without_rows(tmp_path):
    _write_xnli(tmp_path)
    with _raises(ValueError, "xnli.dev.tsv", "no examples", "'sw'", "--xnli_language=sw"):
        create_processor("xnli", xnli_language="sw").get_dev_examples(tmp_path)


def test_wrong_column_counts(tmp_path):
    path = _write(
        tmp_path,
        "train.tsv",
        [
            ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
            ["1", "1", "2", "Fine.", "Good."],
            ["1", "3", "4", "A tab\tsplits this.", "Oops."],
        ],
    )
    with _raises(ValueError, f"{path}:3:", "6", "expected 5"):
        create_processor("mrpc").get_train_examples(tmp_path)
    path = _write(tmp_path, "dev.tsv", [["src", "1", "Too few columns."]])  # CoLA reads column 3
    with _raises(ValueError, f"{path}:1:", "3 tab-separated columns", "reads 4"):
        create_processor("cola").get_dev_examples(tmp_path)


def test_unknown_and_non_numeric_labels(tmp_path):
    path = _write(tmp_path, "train.tsv", [["sentence", "label"], ["ok", "1"], ["odd", "2"]])
    with _raises(ValueError, f"{path}:3:", "'2'", "'0', '1'"):
        create_processor("sst-2").get_train_examples(tmp_path)
    path = _write(
        tmp_path,
        "dev.tsv",
        [
            ["i", "g", "f", "y", "o", "s1", "s2", "a", "b", "score"],
            ["0", "", "", "", "", "", "", "A.", "B.", "high"],
        ],
    )
    with _raises(ValueError, f"{path}:2:", "'high'", "not a finite number"):
        create_processor("sts-b").get_dev_examples(tmp_path)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"sentence\tlabel\nfine\t1\nbad \xff byte\t0\n")
    with _raises(ValueError, f"{path}:3:", "UTF-8"):
        create_processor("sst-2").get_train_examples(tmp_path)


def test_multilabel_bad_input(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("cats\ndogs\ncats\n", encoding="utf-8")
    with _raises(ValueError, f"{labels}:3:", "'cats'", "twice"):
        create_processor("multilabel", labels_file=str(labels))
    labels.write_text("cats\ndogs\n", encoding="utf-8")
    p = create_processor("multilabel", labels_file=str(labels))

    path = _write(tmp_path, "train.tsv", [["sentence", "labels"], ["Hi.", "cats"]])
    with _raises(ValueError, f"{path}:1:", "'text_a'"):
        p.get_train_examples(tmp_path)
    path = _write(tmp_path, "dev.tsv", [["text_a", "id"], ["Hi.", "1"]])
    with _raises(ValueError, f"{path}:1:", "'labels'"):
        p.get_dev_examples(tmp_path)
    path = _write(
        tmp_path, "train.tsv", [["text", "labels"], ["Hi.", "cats"], ["Yo.", "dogs,birds"]]
    )
    with _raises(ValueError, f"{path}:3:", "'birds'", str(labels), "'cats', 'dogs'"):
        p.get_train_examples(tmp_path)
    path = _write(tmp_path, "test.tsv", [["labels", "text", "labels"], ["cats", "Hi.", "dogs"]])
    with _raises(ValueError, f"{path}:1:", "'labels'", "twice"):
        p.get_test_examples(tmp_path)
    _write(tmp_path, "test.tsv", [["", "text", "", "labels"], ["x", "Hi.", "y", "dogs"]])
    assert p.get_test_examples(tmp_path) == [E("test-1", "Hi.", None, ["dogs"])]


def test_read_tsv_is_the_originals(tmp_path):
    path = _write(tmp_path, "x.tsv", [["a", '"quoted'], [], ["b", 'c"']])
    assert DataProcessor._read_tsv(path) == [["a", '"quoted'], [], ["b", 'c"']]
    with _raises(FileNotFoundError, os.path.join(str(tmp_path), "y.tsv")):
        DataProcessor._read_tsv(os.path.join(str(tmp_path), "y.tsv"))


# ---------------------------------------------------------------------------------------------
# The registry.


def test_lookup_is_case_insensitive_and_unknown_names_list_the_known_ones():
    assert type(create_processor(" MRPC ")).__name__ == "MrpcProcessor"
    assert type(create_processor("Sst-2")).__name__ == "Sst2Processor"
    assert {"cola", "mnli", "mnli-mm", "mrpc", "xnli", "multilabel"} <= set(task_names())
    assert task_names() == sorted(task_names())
    with _raises(ValueError, "'nope'", "cola, mnli, mnli-mm, mrpc"):
        create_processor("nope")


def test_options_go_only_where_accepted_and_required_ones_are_checked(tmp_path):
    assert create_processor("mrpc", xnli_language="de", labels_file="x").get_labels() == ["0", "1"]
    assert create_processor("xnli", xnli_language="de", labels_file="x").language == "de"
    assert create_processor("xnli", xnli_language=None).language == "zh"  # None: not given
    with _raises(ValueError, "multilabel", "labels_file"):
        create_processor("multilabel", xnli_language="de")
    with _raises(ValueError, "multilabel", "labels_file"):
        create_processor("multilabel", labels_file=None)


def test_user_tasks_register_both_ways(tmp_path, registry):
    # The module docstring's example.
    @register_task("Sentiment")
    class SentimentTask(TsvTask):
        labels = ["neg", "pos"]
        train_file = TsvFile("train.tsv", text_a=1, label=0)
        dev_file = train_file.at("dev.tsv")
        test_file = TsvFile("test.tsv", text_a=1, index=0)

    path = _write(tmp_path, "train.tsv", [["label", "text"], ["pos", "Lovely."], ["meh", "Hm."]])
    _write(tmp_path, "test.tsv", [["id", "text"], ["q1", "Fine."]])
    task = create_processor("SENTIMENT")
    assert isinstance(task, SentimentTask) and task.task_name == "sentiment"
    assert task.get_test_examples(tmp_path) == [E("test-1", "Fine.", index="q1")]
    with _raises(ValueError, f"{path}:3:", "'meh'", "sentiment", "'neg', 'pos'"):
        task.get_train_examples(tmp_path)

    class OriginalStyle(DataProcessor):  # as written for the original run_classifier.py
        def __init__(self, lowercase=False):
            self.lowercase = lowercase

        def get_train_examples(self, data_dir):
            lines = self._read_tsv(os.path.join(data_dir, "train.tsv"))
            return [
                InputExample(guid="train-%d" % i, text_a=line[1], label=line[0])  # noqa: UP031 - the original's way
                for i, line in enumerate(lines)
                if i > 0
            ]

        def get_labels(self):
            return ["neg", "pos"]

    register_task("original", OriginalStyle)
    task = create_processor("original", xnli_language="de", lowercase=True)
    assert task.lowercase
    assert task.get_train_examples(str(tmp_path))[0] == E("train-1", "Lovely.", None, "pos")

    with _raises(ValueError, "'original'", "already registered"):
        register_task("ORIGINAL", SentimentTask)
    register_task("original", SentimentTask, replace=True)
    assert isinstance(create_processor("original"), SentimentTask)


def test_processor_for_tfds():
    assert processor_for_tfds("glue/mrpc") == "mrpc"
    assert processor_for_tfds("glue/mrpc:2.0.0") == "mrpc"
    assert processor_for_tfds("glue/mnli") == "mnli"
    assert processor_for_tfds("glue/sst2") == "sst-2"
    assert processor_for_tfds("xnli") == "xnli"
    assert processor_for_tfds("glue/ax") is None
