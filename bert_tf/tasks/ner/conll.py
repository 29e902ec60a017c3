"""Named-entity data in the CoNLL-2003 layout, from files or TFDS: sentences of words and tags.

A CoNLL file has one word per line with its columns separated by white space (CoNLL-2003
English: word, part of speech, chunk tag, entity tag), the entity tag in the last column, a blank
line after each sentence and a `-DOCSTART- -X- -X- O` line (then a blank line) before each
document. train.txt, valid.txt and test.txt of the shared task are such files. Tags are `O` or
`B-`/`I-`/`E-`/`S-` and a type: IOB1 (the original CoNLL-2003 files), IOB2/BIO (most
re-distributions) and IOBES all read as they are; conlleval's rules (`bert_tf.tasks.ner.conlleval`) score
each. A bad line is an error naming the file and line.
"""

import dataclasses

from bert_tf.data.text_files import format_names, read_text_lines
from bert_tf.tasks.ner.conlleval import OUTSIDE, PREFIXES, is_valid_tag, split_tag

DOCSTART = "-DOCSTART-"
# Where the splits sit: file names in --data_dir, TFDS split names.
SPLIT_FILES = {"train": "train.txt", "dev": "valid.txt", "test": "test.txt"}
TFDS_SPLITS = {"train": "train", "dev": "dev", "test": "test"}
TFDS_WORDS, TFDS_TAGS = "tokens", "ner"  # conll2003's features


@dataclasses.dataclass
class Sentence:
    """One sentence: its words and their tags (None when the file has no tag column)."""

    words: list
    tags: list | None = None
    where: str = ""  # "file:line" of its first word, or the TFDS example, for messages


def _tag_problem(tag, labels):
    if not is_valid_tag(tag):
        return f"tag {tag!r} is not O or B-/I-/E-/S- followed by a type (IOB1, IOB2 or IOBES)"
    if labels is not None and tag not in labels:
        return f"tag {tag!r} is not one of the labels [{format_names(list(labels))}]"
    return None


def read_conll(path, labels=None, tagged=True):
    """The sentences of a CoNLL file.

    labels: the known tags; a tag outside them is an error (None: any well-formed tag).
    tagged: whether the last column is the tag. A file whose lines are words alone is read as
      untagged (`tags` None) when `tagged` is False, and is an error otherwise.

    Every word line must have as many columns as the file's first one (a missing tag shows as
    a line with fewer); an empty file, one without a word, a malformed tag or one outside
    `labels` is a ValueError naming the file and line.
    """
    sentences, words, tags, first, width = [], [], [], None, None

    def close():
        if words:
            sentences.append(Sentence(list(words), list(tags) if width > 1 else None, first))
            words.clear()
            tags.clear()

    for number, line in read_text_lines(path):
        cells = line.split()
        if not cells or cells[0] == DOCSTART:
            close()
            continue
        if width is None:
            width, width_line = len(cells), number
            if width == 1 and tagged:
                raise ValueError(
                    f"{path}:{number}: a word without a tag ({cells[0]!r}); the tag goes in the last column"
                )
        elif len(cells) != width:
            raise ValueError(
                f"{path}:{number}: {len(cells)} column(s), but line {width_line} has {width}: every word "
                "line needs the same columns, the tag last (a missing tag?)"
            )
        if not words:
            first = f"{path}:{number}"
        words.append(cells[0])
        if width > 1:
            problem = _tag_problem(cells[-1], labels)
            if problem:
                raise ValueError(f"{path}:{number}: {problem}")
            tags.append(cells[-1])
    close()
    if not sentences:
        raise ValueError(f"{path}: no sentences (the file is empty or holds only {DOCSTART} lines)")
    return sentences


def write_predictions(path, sentences, predicted):
    """conlleval's input, written atomically: `word gold predicted` per line (`word predicted`
    for untagged sentences), a blank line after each sentence."""
    from bert_tf.io_utils import atomic_write

    with atomic_write(path) as f:
        for sentence, tags in zip(sentences, predicted, strict=True):
            gold = sentence.tags or [None] * len(tags)
            for word, g, p in zip(sentence.words, gold, tags, strict=True):
                f.write(" ".join(x for x in (word, g, p) if x is not None) + "\n")
            f.write("\n")


def label_list(sentences):
    """The tags that occur, `O` first, then by type and B, I, E, S: the model's class order."""
    found = {t for s in sentences for t in s.tags or ()} - {OUTSIDE}

    def order(tag):
        prefix, kind = split_tag(tag)
        return kind, PREFIXES.index(prefix)

    return [OUTSIDE, *sorted(found, key=order)]


def read_labels_file(path):
    """Tags from a file, one per line (blank lines skipped), in the model's class order."""
    labels, seen = [], {}
    for number, line in read_text_lines(path):
        tag = line.strip()
        if not tag:
            continue
        twice = f"tag {tag!r} is listed twice (line {seen[tag]})" if tag in seen else None
        problem = _tag_problem(tag, None) or twice
        if problem:
            raise ValueError(f"{path}:{number}: {problem}")
        seen[tag] = number
        labels.append(tag)
    if not labels:
        raise ValueError(f"{path}: no labels (the file is empty)")
    return labels


def tfds_tag_names(name="conll2003", data_dir=None):
    """The tags of a TFDS dataset with conll2003's features, in ClassLabel order (the dataset's
    description; it need not be prepared)."""
    import tensorflow_datasets as tfds

    try:
        return list(tfds.builder(name, data_dir=data_dir).info.features[TFDS_TAGS].feature.names)
    except Exception as e:  # DatasetNotFoundError, a bad config, another feature layout
        raise ValueError(f"TFDS dataset {name}: no tag names ({type(e).__name__}: {e})") from e


def read_tfds_sentences(split, name="conll2003", data_dir=None, download=False, labels=None):
    """A split ("train", "dev" or "test") of a TFDS dataset with conll2003's features (`tokens`,
    and `ner`, a sequence of ClassLabel), as Sentences.

    A tag outside `labels`, or an example whose tags and words differ in number, is a ValueError
    naming the example.
    """
    import tensorflow_datasets as tfds

    from bert_tf.data.tfds import load_split

    if split not in TFDS_SPLITS:
        raise ValueError(f"unknown split {split!r}: expected one of {sorted(TFDS_SPLITS)}")
    where = f"TFDS dataset {name}, split {TFDS_SPLITS[split]}"
    described = f"{where}, data_dir {data_dir or '(TFDS default)'}"
    info, dataset = load_split(name, TFDS_SPLITS[split], data_dir, download, described)
    names = list(info.features[TFDS_TAGS].feature.names)
    sentences = []
    for i, row in enumerate(tfds.as_numpy(dataset)):
        at = f"{where}, example {i}"
        words = [w.decode("utf-8") for w in row[TFDS_WORDS]]
        tags = [names[t] for t in row[TFDS_TAGS]]
        if len(words) != len(tags):
            raise ValueError(f"{at}: {len(words)} words but {len(tags)} tags")
        for tag in tags:
            problem = _tag_problem(tag, labels)
            if problem:
                raise ValueError(f"{at}: {problem}")
        if words:
            sentences.append(Sentence(words, tags, at))
    if not sentences:
        raise ValueError(f"{where}: no sentences")
    return sentences
