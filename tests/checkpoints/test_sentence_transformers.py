"""Reading a sentence-transformers folder's modules (written here by hand in the layout its
save() writes), refusing what bert_tf cannot compute, and the module files we write."""

import json
import os

import pytest

from bert_tf.checkpoints import sentence_transformers as st


def _folder(root, pooling="pooling_mode_mean_tokens", normalize=True, modules=None, **files):
    root.mkdir(parents=True, exist_ok=True)
    listed = modules or [
        {"idx": 0, "name": "0", "path": "", "type": st.TRANSFORMER},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": st.POOLING},
        *([{"idx": 2, "name": "2", "path": "2_Normalize", "type": st.NORMALIZE}] if normalize else []),
    ]
    written = {
        "modules.json": listed,
        "config.json": {"model_type": "bert", "hidden_size": 32},
        "sentence_bert_config.json": {"max_seq_length": 256, "do_lower_case": False},
        "1_Pooling/config.json": {"word_embedding_dimension": 32, "pooling_mode_cls_token": False,
                                  "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
                                  "pooling_mode_mean_sqrt_len_tokens": False, pooling: True},
        "config_sentence_transformers.json": {"prompts": {"query": "", "document": ""}, "default_prompt_name": None,
                                              "similarity_fn_name": "cosine"},
        **files,
    }
    for name, value in written.items():
        if value is not None:
            os.makedirs(os.path.dirname(root / name), exist_ok=True)
            (root / name).write_text(json.dumps(value))
    return root


def test_the_minilm_layout_reads_as_mean_pooling_normalized_at_its_length(tmp_path):
    folder = _folder(tmp_path / "m")
    assert st.is_sentence_transformers_folder(str(folder)) and not st.is_sentence_transformers_folder(str(tmp_path))
    modules = st.read_modules(str(folder))
    assert modules == st.Modules(str(folder) + os.sep, "mean", True, 256, False)


@pytest.mark.parametrize("key, pooling", [(key, name) for name, key in st.POOLING_KEYS.items()])
def test_each_pooling_mode_we_compute_is_read(tmp_path, key, pooling):
    assert st.read_modules(str(_folder(tmp_path / "m", key, normalize=False))).pooling == pooling


@pytest.mark.parametrize("change, message", [
    (dict(modules=[{"type": st.TRANSFORMER, "path": ""}, {"type": st.POOLING, "path": "1_Pooling"},
                   {"type": "sentence_transformers.models.Dense", "path": "2_Dense"}]),
     r"its module sentence_transformers.models.Dense \(path '2_Dense'\) is not one bert_tf computes"),
    (dict(modules=[{"type": st.POOLING, "path": "1_Pooling"}, {"type": st.TRANSFORMER, "path": ""}]),
     "are not in the order bert_tf computes"),
    ({"config.json": {"model_type": "roberta"}}, "its Transformer module is a 'roberta' model, not BERT"),
    (dict(pooling="pooling_mode_weightedmean_tokens"), "pooling modes pooling_mode_weightedmean_tokens: bert_tf"),
    ({"config_sentence_transformers.json": {"prompts": {"query": "query: "}}},
     r"prepends a prompt \(query\); bert_tf embeds texts as given"),
    ({"config_sentence_transformers.json": {"similarity_fn_name": "dot"}}, "similarity_fn_name='dot'"),
    ({"sentence_bert_config.json": {"max_seq_length": 0}}, "max_seq_length=0 is not a positive integer"),
])
def test_what_we_cannot_compute_is_refused_naming_the_file_and_module(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        st.read_modules(str(_folder(tmp_path / "m", **change)))


def test_two_pooling_modes_at_once_are_refused(tmp_path):
    folder = _folder(tmp_path / "m")
    config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({**config, "pooling_mode_cls_token": True}))
    with pytest.raises(ValueError, match="pooling_mode_cls_token, pooling_mode_mean_tokens: bert_tf computes exactly"):
        st.read_modules(str(folder))


def test_settings_given_anyway_must_agree():
    modules = st.Modules("/m", "mean", True, 256, False)
    st.check_agrees(modules, pooling="mean", normalize=True)
    st.check_agrees(modules)  # nothing given
    with pytest.raises(ValueError, match="^pooling=cls but the sentence-transformers folder init_checkpoint has "
                                         "pooling=mean$"):
        st.check_agrees(modules, pooling="cls")
    with pytest.raises(ValueError, match="^normalize=False but the sentence-transformers folder"):
        st.check_agrees(modules, normalize=False)


def test_a_folders_length_beyond_its_positions_is_refused_naming_its_file(tmp_path):
    """The max length is where texts are cut (any length up to the positions may be given instead),
    but the folder's own, when it is taken, must fit the model."""
    config = {"model_type": "bert", "hidden_size": 32, "max_position_embeddings": 512}
    folder = _folder(tmp_path / "m", **{"sentence_bert_config.json": {"max_seq_length": 1000}, "config.json": config})
    with pytest.raises(ValueError, match=rf"^{folder}/sentence_bert_config.json: max_seq_length=1000 is more than the "
                                         rf"model's max_position_embeddings=512 \({folder}/config.json\)$"):
        st.check_length_fits(st.read_modules(str(folder)))
    fits = _folder(tmp_path / "ok", **{"sentence_bert_config.json": {"max_seq_length": 512}, "config.json": config})
    st.check_length_fits(st.read_modules(str(fits)))


def test_the_files_we_write_read_back_as_the_same_modules(tmp_path):
    folder = tmp_path / "out"
    files = st.module_files("max", True, 64, 32)
    written = {**files, "config.json": {"model_type": "bert"}}
    for name, value in written.items():
        os.makedirs(os.path.dirname(folder / name), exist_ok=True)
        (folder / name).write_text(json.dumps(value))
    os.makedirs(folder / st.NORMALIZE_FOLDER)
    assert st.read_modules(str(folder)) == st.Modules(str(folder) + os.sep, "max", True, 64, False)
    assert [m["path"] for m in files["modules.json"]] == ["", "1_Pooling", "2_Normalize"]
