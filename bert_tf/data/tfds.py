"""Reading a prepared tensorflow-datasets split, with errors that say where and what to do.
tensorflow_datasets is imported only when reading (it is slow to import)."""


def load_split(name, tfds_split, data_dir, download, where):
    """Loads a prepared tensorflow-datasets split, or raises an error that says where and what to do.

    Args:
        name: The TFDS dataset's name (with its config and version, if any, e.g. "glue/mrpc").
        tfds_split: The split, e.g. "train".
        data_dir: The TFDS data folder; None: TFDS's default (~/tensorflow_datasets).
        download: Whether to download and prepare the dataset first.
        where: What asked for the dataset (e.g. a setting and its value); every message starts
            with it.

    Returns:
        `(info, dataset)`: the dataset's `tfds.core.DatasetInfo`, and the split as a
        `tf.data.Dataset` with its files in order (not shuffled).

    Raises:
        ValueError: No such dataset, the dataset has no such split, or the split cannot be read.
        FileNotFoundError: The dataset is not prepared in `data_dir`.
    """
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception as e:  # DatasetNotFoundError, an unknown config, a bad version
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ValueError(f"{where}: no such TFDS dataset ({type(e).__name__}: {first_line})") from e
    known = list(builder.info.splits.keys())  # empty until prepared (and under mock_data)
    if known and tfds_split not in known:
        raise ValueError(f"{where}: the dataset has no split {tfds_split!r} (it has {known})")
    if download:
        builder.download_and_prepare()
    try:
        return builder.info, builder.as_dataset(split=tfds_split, shuffle_files=False)
    except AssertionError as e:  # TFDS's way of saying "not prepared"
        raise FileNotFoundError(
            f"{where}: the dataset is not prepared there; run `tfds build {name} "
            f"--data_dir={data_dir or '~/tensorflow_datasets'}` or let it download (download=True; "
            "the scripts' --tfds_download)"
        ) from e
    except (ValueError, KeyError) as e:
        raise ValueError(f"{where}: cannot read split {tfds_split!r} ({e})") from e
