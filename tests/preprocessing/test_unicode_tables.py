import numpy as np

from bert_tf.preprocessing import unicode_tables


def test_tables_are_cached_on_disk_and_reload_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_TF_CACHE_DIR", str(tmp_path))
    built = unicode_tables._build_combining_classes()
    assert unicode_tables._cached("combining_classes", unicode_tables._build_combining_classes) is not None
    (cache,) = list(tmp_path.iterdir())
    assert cache.name.startswith("unicode_tables-") and cache.suffix == ".npz"
    calls = []
    loaded = unicode_tables._cached("combining_classes", lambda: calls.append(1))
    assert not calls  # came from the file
    np.testing.assert_array_equal(loaded, built)
    # Spot checks by hand: combining acute accent 230, a virama 9, a letter 0.
    assert (loaded[0x301], loaded[0x94D], loaded[ord("a")]) == (230, 9, 0)


def test_an_unwritable_cache_only_costs_time(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("BERT_TF_CACHE_DIR", str(blocked))
    value = unicode_tables._cached("x", lambda: np.arange(3))
    np.testing.assert_array_equal(value, [0, 1, 2])
