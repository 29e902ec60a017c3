"""What the fine-tuning script tests share: a tiny model folder, flag lists, result files, and
copies of a data folder with some files replaced."""

import json

from tests.tiny import tiny_config, write_vocab


def write_model(directory, vocab):
    """bert_config.json (the tiny config, sized to `vocab`) and vocab.txt in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "bert_config.json").write_text(json.dumps(tiny_config(vocab_size=len(vocab)).to_dict()))
    write_vocab(directory / "vocab.txt", vocab)
    return directory


def script_flags(model_dir, values):
    """`--name=value` for each value that is not None (the model folder's vocab and config),
    and --noprogress."""
    values = dict(vocab_file=model_dir / "vocab.txt", bert_config_file=model_dir / "bert_config.json", **values)
    return [f"--{k}={v}" for k, v in values.items() if v is not None] + ["--noprogress"]


def read_results(path):
    """An eval_results.txt-style file as a dict of strings."""
    return dict(line.split(" = ") for line in path.read_text().splitlines())


def data_variant(directory, files, **changes):
    """`directory` made and filled with `files` (name -> text), `changes` replacing some (None:
    left out)."""
    directory.mkdir()
    for name, text in {**files, **changes}.items():
        if text is not None:
            (directory / name).write_text(text)
    return directory
