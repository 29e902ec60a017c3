"""`multilabel`: any number of labels per text (a sigmoid per label), from TSV files with a header.

labels.txt (the `labels_file` option): one label name per line; blank lines are ignored.
train.tsv / dev.tsv / test.tsv: a header row naming the columns, in any order:
  text_a (or text)   the text; required
  text_b             optional second text
  labels             comma-separated label names, may be empty (no label); required in
                     train/dev, optional in test
  id (or index)      optional; becomes InputExample.index (the id written with predictions)
Other columns are ignored. `InputExample.label` is the list of names (test without a labels
column: None).
"""

from bert_tf.data.text_files import format_names, read_table, read_text_lines
from bert_tf.errors import shown
from bert_tf.tasks.classifier.processors import DataProcessor, InputExample, find_data_file, register_task

_COLUMNS = "text_a (or text), [text_b], labels, [id]"
_READ = {"text_a", "text", "text_b", "labels", "id", "index"}


def read_label_file(path):
    """Label names, one per non-blank line (stripped); a duplicate is a ValueError."""
    first_seen = {}
    for line, name in read_text_lines(path):
        name = name.strip()
        if not name:
            continue
        if "," in name:
            raise ValueError(f"{path}:{line}: label {name!r} has a comma (the labels separator)")
        if name in first_seen:
            raise ValueError(
                f"{path}:{line}: label {name!r} is listed twice (first on line {first_seen[name]})"
            )
        first_seen[name] = line
    if not first_seen:
        raise ValueError(f"{path}: no labels (expected one label name per line)")
    return list(first_seen)


@register_task("multilabel")
class MultiLabelProcessor(DataProcessor):
    label_kind = "multi"
    files = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}

    def __init__(self, labels_file):
        self.labels_file = labels_file
        self._labels = read_label_file(labels_file)
        self._known = set(self._labels)

    def get_labels(self):
        return list(self._labels)

    def get_train_examples(self, data_dir):
        return self._read(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self._read(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self._read(data_dir, "test")

    def _columns(self, path, line, header, split):
        """Header name -> column index for the columns we read."""
        columns = {}
        for i, cell in enumerate(header):
            name = cell.strip().lower()
            if name in columns and name in _READ:
                raise ValueError(f"{path}:{line}: column {name!r} appears twice in the header")
            columns.setdefault(name, i)
        found = {
            "text_a": columns.get("text_a", columns.get("text")),
            "text_b": columns.get("text_b"),
            "labels": columns.get("labels"),
            "id": columns.get("id", columns.get("index")),
        }
        required = ["text_a"] + (["labels"] if split != "test" else [])
        for key in required:
            if found[key] is None:
                raise ValueError(
                    f"{path}:{line}: the header {header} has no {key!r} column; the first row "
                    f"must name the columns: {_COLUMNS}"
                )
        return found

    def _parse_labels(self, cell, path, line):
        names = []
        for name in (n.strip() for n in cell.split(",")):
            if not name or name in names:
                continue
            if name not in self._known:
                raise ValueError(
                    f"{path}:{line}: label {name!r} is not in the {shown.labels_file} {self.labels_file} "
                    f"[{format_names(self._labels)}]"
                )
            names.append(name)
        return names

    def _read(self, data_dir, split):
        path = find_data_file(self, data_dir, self.files[split], split)
        table = read_table(path)
        header_line, header = table[0]
        col = self._columns(path, header_line, header, split)
        examples = []
        for line, row in table[1:]:
            labels = row[col["labels"]] if col["labels"] is not None else None
            text_b = row[col["text_b"]] if col["text_b"] is not None else ""
            examples.append(
                InputExample(
                    guid=f"{split}-{line - 1}",
                    text_a=row[col["text_a"]],
                    text_b=text_b or None,
                    label=None if labels is None else self._parse_labels(labels, path, line),
                    index=row[col["id"]] if col["id"] is not None else None,
                )
            )
        if not examples:
            raise ValueError(f"{path}: no examples (only a header)")
        return examples
