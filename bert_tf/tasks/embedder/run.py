"""A sentence-embedding run's steps around the one loop (run_sentence_embedding.py's main, without
its flags): reading the split files, the run record, the task, evaluation (eval_results.txt) and
prediction's files (test_embeddings.npy and test_texts.txt)."""

import dataclasses
import os

import numpy as np
from absl import logging

from bert_tf.checkpoints import sentence_transformers as st
from bert_tf.data.batching import with_unlabelled
from bert_tf.data.text_files import split_file
from bert_tf.io_utils import atomic_write
from bert_tf.models.bert_sentence_embedder import SIMILARITY_SCALE
from bert_tf.runs.record import RESUMED_FIELDS, RunRecord
from bert_tf.tasks.embedder.reader import Pairs, check_retrieval_repeats, check_training_repeats, read_pairs, read_texts
from bert_tf.tasks.embedder.task import EmbedderTask, features

TASK_NAME = "sentence_embedding"
SPLIT_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
EMBEDDINGS_FILE = "test_embeddings.npy"  # float32 [texts, hidden], row i the embedding of text i
TEXTS_FILE = "test_texts.txt"  # the texts, one per line, in the rows' order


def folder_record(folder, casing, bert_config):
    """The run record a sentence-transformers folder's BERT module stands for.

    The sentence embedder's `TaskKind.folder_record`: a Hugging Face folder read as a run looks
    here first.

    Args:
        folder: A folder: the sentence-transformers folder itself, or its BERT module's subfolder.
        casing: A callable returning the folder's casing (do_lower_case), called only for such a folder.
        bert_config: The folder's BertConfig; its longest length is the max_seq_length where the
            modules give none.

    Returns:
        A sentence embedder's RunRecord, named after the sentence-transformers folder, with its
        modules' pooling and normalization, their max length and the loss's default scale; None
        for any other folder.
    """
    found = st.modules_of(folder)
    if found is None:
        return None
    top, modules = found
    return RunRecord(
        kind="embedder", task_name=os.path.basename(top), do_lower_case=casing(),
        max_seq_length=modules.max_seq_length or bert_config.max_position_embeddings,
        pooling=modules.pooling, normalize=modules.normalize, similarity_scale=SIMILARITY_SCALE,
    )


def read_split(data_dir, split, do_lower_case=True):
    """The split's file in `data_dir`: Pairs (train), Pairs or ScoredPairs (dev), texts (test).
    Pairs that repeat a text are checked: in train.tsv a few repeated positives are a warning and
    more a ValueError (`check_training_repeats`), in a retrieval dev.tsv any repeat is one
    (`check_retrieval_repeats`). Texts are compared as the run's tokenizer sees them (`do_lower_case`)."""
    path = split_file(data_dir, split, SPLIT_FILES[split])
    if split == "test":
        return read_texts(path)
    pairs = read_pairs(path, scored_allowed=split == "dev", do_lower_case=do_lower_case)
    if split == "train":
        warning = check_training_repeats(path, pairs, do_lower_case=do_lower_case)
        if warning:
            logging.warning("%s", warning)
    elif isinstance(pairs, Pairs):
        check_retrieval_repeats(path, pairs, do_lower_case)
    return pairs


def read_transfer(path):
    """The texts of `path`, a transfer file in test.tsv's layout (a header `text`, one text per row);
    a ValueError naming the file otherwise."""
    return read_texts(path)


def with_transfer(data, texts):
    """Training rows (`features` of the train pairs) with `texts` added as rows of weight 0: each
    text in every column (anchor, positive and negative alike), so that it is embedded once per
    column as the pairs' texts are, its only target the teacher's vector (a weight-0 row is no
    anchor and no candidate of the in-batch loss)."""
    column = np.array(list(texts), dtype=object)
    return with_unlabelled(data, {k: column for k in data})


def embedder_record(pooling, normalize, similarity_scale, do_lower_case, max_seq_length, max_windows=1,
                    doc_stride=None):
    """The run record of an embedding run (`max_windows`, `doc_stride`: how it reads long texts)."""
    return RunRecord(
        kind="embedder", task_name=TASK_NAME, do_lower_case=do_lower_case, max_seq_length=max_seq_length,
        options={"pooling": pooling, "normalize": bool(normalize), "similarity_scale": float(similarity_scale)},
        max_windows=max_windows, doc_stride=doc_stride,
    )


def fields_to_match(do_train):
    """The record fields an earlier run in output_dir must share: one that trains resumes it (the
    same model and loss, the same batches); one that only evaluates or predicts needs the same
    vectors (the pooling and normalization)."""
    model = ("kind", "pooling", "normalize")
    return (*model, "task_name", "similarity_scale", *RESUMED_FIELDS) if do_train else model


def build_task(bert_config, record: RunRecord, vocab_file, length_bucket=None):
    """The EmbedderTask of `record`, its batches cut to a multiple of `length_bucket`."""
    return EmbedderTask(
        bert_config, record.pooling, record.normalize, record.similarity_scale, vocab_file=vocab_file,
        do_lower_case=record.do_lower_case, max_seq_length=record.max_seq_length, length_bucket=length_bucket,
        max_windows=record.max_windows, doc_stride=record.doc_stride,
    )


def evaluate(trainer, dev):
    """The dev figures (`EmbedderTask.eval_results`), written to eval_results.txt in the trainer's
    output_dir; returns them."""
    results = trainer.evaluate(features(dev))
    trainer.write_eval_results(results)
    return results


@dataclasses.dataclass(frozen=True)
class PredictionFiles:
    embeddings_file: str
    texts_file: str


def write_predictions(output_dir, texts, embeddings):
    """test_embeddings.npy (float32 `[len(texts), hidden]`; rows past the texts are padding and
    dropped) and test_texts.txt (each text as it is, ended by "\n": split it on "\n" alone, since a
    text may hold other Unicode line separators; a "\r" or "\n" in a text, which a TSV row cannot
    hold, would be written as a space) in `output_dir`, each written whole or not at all. Returns
    PredictionFiles."""
    files = PredictionFiles(os.path.join(output_dir, EMBEDDINGS_FILE), os.path.join(output_dir, TEXTS_FILE))
    with atomic_write(files.embeddings_file, "wb") as f:
        np.save(f, np.asarray(embeddings[: len(texts)], np.float32))
    with atomic_write(files.texts_file) as f:
        for text in texts:
            f.write(text.replace("\r", " ").replace("\n", " ") + "\n")
    return files


def predict(trainer, texts):
    """The trained model's embedding of each of `texts`, written to the trainer's output_dir
    (`write_predictions`). Every worker predicts; only the chief writes and gets PredictionFiles."""
    predictions = trainer.predict(features(texts))
    if not trainer.is_chief:
        return None
    return write_predictions(trainer.settings.output_dir, texts, predictions["embeddings"])
