"""The built-in GLUE and XNLI tasks, registered under their `--task_name`s.

cola, mnli, mrpc and xnli read their files exactly as the original `run_classifier.py` does (same
columns, guids and placeholder test labels). The other GLUE tasks read the files of the GLUE
benchmark's own download (glue_data/<TASK>/, as its download_glue_data.py writes them); the layout
is written above each task, as the TFDS GLUE builder (which reads the same files by header name)
and Hugging Face transformers' GLUE processors read them. Their unlabelled test rows have label
None, as TFDS's do. Guids are "<set>-<0-based line>" unless a task says otherwise.

Every GLUE test file starts with an `index` (QQP: `id`) column; it becomes `InputExample.index`,
the id the submission file (`submission_name`.tsv) wants.
"""

from bert_tf.tasks.classifier.processors import TsvFile, TsvTask, register_task
from bert_tf.tasks.classifier.tfds import TfdsSource

_NLI_LABELS = ["contradiction", "entailment", "neutral"]
_GLUE_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


def _glue(config, text_a, text_b=None, splits=None, **extras):
    return TfdsSource(f"glue/{config}", text_a, text_b, splits=splits or _GLUE_SPLITS, **extras)


@register_task("cola")
class ColaProcessor(TsvTask):
    # train/dev.tsv: NO header; 4 columns: source, label, original label (or empty), sentence.
    # test.tsv: a header, then `index, sentence`. guid: set + the row's position.
    labels = ["0", "1"]
    submission_name = "CoLA"
    tfds = _glue("cola", "sentence")
    train_file = TsvFile("train.tsv", text_a=3, label=1, header=False)
    dev_file = train_file.at("dev.tsv")
    test_file = TsvFile("test.tsv", text_a=1, index=0, dummy_label="0")


@register_task("mnli")
class MnliProcessor(TsvTask):
    # All with a header. train.tsv, 12 columns: index, promptID, pairID, genre,
    # sentence1_binary_parse, sentence2_binary_parse, sentence1_parse, sentence2_parse,
    # sentence1, sentence2, label1, gold_label. dev_*.tsv, 16: label1..label5 before gold_label.
    # test_*.tsv, 10: up to sentence2. The label is the last column; guid: set + index column.
    labels = _NLI_LABELS
    submission_name = "MNLI-m"
    tfds = _glue(
        "mnli",
        "premise",
        "hypothesis",
        splits={"train": "train", "dev": "validation_matched", "test": "test_matched"},
        extra_dev={"mismatched": "validation_mismatched"},
        extra_test={"mismatched": "test_mismatched"},
    )
    train_file = TsvFile("train.tsv", text_a=8, text_b=9, label=-1, guid=0)
    dev_file = train_file.at("dev_matched.tsv", set_name="dev_matched")
    test_file = TsvFile(
        "test_matched.tsv", text_a=8, text_b=9, guid=0, index=0, dummy_label="contradiction"
    )
    extra_dev_files = {"mismatched": train_file.at("dev_mismatched.tsv")}
    extra_test_files = {"mismatched": ("MNLI-mm", test_file.at("test_mismatched.tsv"))}


@register_task("mnli-mm")
class MnliMismatchedProcessor(MnliProcessor):
    # MNLI evaluated and predicted on the mismatched genres (GLUE's MNLI-mm submission).
    submission_name = "MNLI-mm"
    tfds = _glue(
        "mnli",
        "premise",
        "hypothesis",
        splits={"train": "train", "dev": "validation_mismatched", "test": "test_mismatched"},
    )
    dev_file = MnliProcessor.train_file.at("dev_mismatched.tsv", set_name="dev_mismatched")
    test_file = MnliProcessor.test_file.at("test_mismatched.tsv")
    extra_dev_files = {}
    extra_test_files = {}


@register_task("mrpc")
class MrpcProcessor(TsvTask):
    # Header; 5 columns: Quality (the label), #1 ID, #2 ID, #1 String, #2 String.
    # test.tsv: index, #1 ID, #2 ID, #1 String, #2 String.
    labels = ["0", "1"]
    submission_name = "MRPC"
    tfds = _glue("mrpc", "sentence1", "sentence2")
    train_file = TsvFile("train.tsv", text_a=3, text_b=4, label=0)
    dev_file = train_file.at("dev.tsv")
    test_file = train_file.at("test.tsv", label=None, index=0, dummy_label="0")


@register_task("xnli")
class XnliProcessor(TsvTask):
    """XNLI in one language: trained on MultiNLI machine-translated into it (XNLI-MT), evaluated on
    its rows of XNLI's dev set (the original's XnliProcessor), predicted on its test rows."""

    # multinli/multinli.train.<lang>.tsv: header; premise, hypo, label ("contradictory" for
    # contradiction). xnli.dev.tsv and xnli.test.tsv: header; 16 columns: language, gold_label,
    # sentence1_binary_parse, sentence2_binary_parse, sentence1_parse, sentence2_parse,
    # sentence1, sentence2, promptID, pairID, genre, label1..label5; every language in one file.
    labels = _NLI_LABELS
    label_aliases = {"contradictory": "contradiction"}
    tfds = TfdsSource(
        "xnli",
        "premise",
        "hypothesis",
        index=None,
        splits={"dev": "validation", "test": "test"},
        missing={
            "train": "TFDS's xnli has only XNLI's dev and test sets; the original trains on "
            "MultiNLI machine-translated into the language (multinli/multinli.train.<lang>.tsv "
            "of XNLI-MT): read it from --data_dir"
        },
    )

    def __init__(self, xnli_language="zh"):
        self.language = xnli_language
        self.missing_file_hint = f"; --xnli_language={xnli_language} chooses the language"

    @property
    def train_file(self):
        return TsvFile(f"multinli/multinli.train.{self.language}.tsv", text_a=0, text_b=1, label=2)

    @property
    def dev_file(self):
        return TsvFile("xnli.dev.tsv", text_a=6, text_b=7, label=1, where=(0, self.language))

    @property
    def test_file(self):
        return self.dev_file.at("xnli.test.tsv")  # XNLI's test set is labelled


@register_task("sst-2")
class Sst2Processor(TsvTask):
    # train/dev.tsv: header; sentence, label. test.tsv: header; index, sentence.
    labels = ["0", "1"]
    submission_name = "SST-2"
    tfds = _glue("sst2", "sentence")
    train_file = TsvFile("train.tsv", text_a=0, label=1)
    dev_file = train_file.at("dev.tsv")
    test_file = TsvFile("test.tsv", text_a=1, index=0)


@register_task("sts-b")
class StsbProcessor(TsvTask):
    """Regression: labels are similarity scores 0..5 as strings; get_labels() is []."""

    # train/dev.tsv: header; 10 columns: index, genre, filename, year, old_index, source1,
    # source2, sentence1, sentence2, score. test.tsv: the first 9.
    label_kind = "regression"
    submission_name = "STS-B"
    tfds = _glue("stsb", "sentence1", "sentence2")
    train_file = TsvFile("train.tsv", text_a=7, text_b=8, label=-1)
    dev_file = train_file.at("dev.tsv")
    test_file = train_file.at("test.tsv", label=None, index=0)


@register_task("qqp")
class QqpProcessor(TsvTask):
    # train/dev.tsv: header; id, qid1, qid2, question1, question2, is_duplicate.
    # test.tsv: header; id, question1, question2.
    labels = ["0", "1"]
    submission_name = "QQP"
    tfds = _glue("qqp", "question1", "question2")
    train_file = TsvFile("train.tsv", text_a=3, text_b=4, label=5)
    dev_file = train_file.at("dev.tsv")
    test_file = TsvFile("test.tsv", text_a=1, text_b=2, index=0)


class _IndexPairLabelTask(TsvTask):
    # train/dev.tsv: header; index, first text, second text, label. test.tsv: without the label.
    train_file = TsvFile("train.tsv", text_a=1, text_b=2, label=3)
    dev_file = train_file.at("dev.tsv")
    test_file = train_file.at("test.tsv", label=None, index=0)


@register_task("qnli")
class QnliProcessor(_IndexPairLabelTask):
    # Columns: index, question, sentence, label.
    labels = ["entailment", "not_entailment"]
    submission_name = "QNLI"
    tfds = _glue("qnli", "question", "sentence")


@register_task("rte")
class RteProcessor(_IndexPairLabelTask):
    # Columns: index, sentence1, sentence2, label.
    labels = ["entailment", "not_entailment"]
    submission_name = "RTE"
    tfds = _glue("rte", "sentence1", "sentence2")


@register_task("wnli")
class WnliProcessor(_IndexPairLabelTask):
    # Columns: index, sentence1, sentence2, label (1: the second sentence follows).
    labels = ["0", "1"]
    submission_name = "WNLI"
    tfds = _glue("wnli", "sentence1", "sentence2")
