"""run_sentence_embedding.py as a user runs it: contrastive fine-tuning on pairs with hard
negatives, the retrieval figures (restated here in numpy from the run's own predictions), STS-style
figures, predictions as .npy, the text-in export, a second run of the same command, a
sentence-transformers folder as --init_checkpoint (its modules' settings, disagreeing flags and
modules we cannot compute refused), and bad inputs."""

import json
import os
import random
import re

import numpy as np
import pytest

from bert_tf import tokenization
from bert_tf.checkpoints import sentence_transformers as st
from tests.hf_folder import write_folder
from tests.run_scripts.conftest import REPO, run_main_cases, run_script, served_export
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import tiny_config, write_vocab

pytestmark = pytest.mark.slow

TOPICS = ["apple", "river", "stone", "cloud", "piano", "tiger", "lemon", "tower", "ocean", "forest",
          "candle", "mirror", "rocket", "garden", "bridge", "violin", "desert", "castle", "pepper", "silver"]
FILL = ["the", "a", "is", "on", "and", "big", "small", "red", "blue", "near", "with", "very"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + TOPICS + FILL
CONFIG = tiny_config(vocab_size=len(VOCAB))


def _sentence(rng, topic):
    words = rng.sample(FILL, 4) + [topic]
    rng.shuffle(words)
    return " ".join(words)


def write_pairs(directory, seed=0, n_train=64):
    """train.tsv (anchor, positive, negative: a pair shares its topic word, the negative has
    another), dev.tsv (one pair per topic) and test.tsv (texts, one of them of other scripts).
    Returns the test texts."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    train = ["anchor\tpositive\tnegative"]
    for _ in range(n_train):
        topic = rng.choice(TOPICS)
        other = rng.choice([t for t in TOPICS if t != topic])
        train.append(f"{_sentence(rng, topic)}\t{_sentence(rng, topic)}\t{_sentence(rng, other)}")
    (directory / "train.tsv").write_text("\n".join(train) + "\n", encoding="utf-8")
    dev = [(_sentence(rng, t), _sentence(rng, t)) for t in TOPICS]
    (directory / "dev.tsv").write_text("positive\tanchor\n" + "".join(f"{p}\t{a}\n" for a, p in dev), encoding="utf-8")
    # A blank line is an empty text: row i of the file stays text i.
    texts = [_sentence(rng, t) for t in TOPICS[:3]] + [""] + [_sentence(rng, t) for t in TOPICS[3:6]] + ["Zoë 猫 river"]
    (directory / "test.tsv").write_text("text\n" + "".join(f"{t}\n" for t in texts) + "\n", encoding="utf-8")
    return dev, texts


@pytest.fixture
def model_dir(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "bert_config.json").write_text(json.dumps(CONFIG.to_dict()))
    write_vocab(d / "vocab.txt", VOCAB)
    return d


def _flags(model_dir, data_dir, out, **overrides):
    values = dict(
        do_train=True, do_eval=True, do_predict=True, data_dir=data_dir, vocab_file=model_dir / "vocab.txt",
        bert_config_file=model_dir / "bert_config.json", max_seq_length=16, train_batch_size=16,
        learning_rate=3e-3, num_train_epochs=20, output_dir=out,
    )
    values.update(overrides)
    return [f"--{k}={v}" for k, v in values.items() if v is not None] + ["--noprogress"]


def _results(out):
    return {k: float(v) for k, v in (line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines())}


def _retrieval(anchors, positives):
    """recall@1, recall@10, MRR@10 of anchor i finding positive i among all by cosine (restated)."""
    a = anchors / np.linalg.norm(anchors, axis=1, keepdims=True)
    p = positives / np.linalg.norm(positives, axis=1, keepdims=True)
    ranks = []
    for i, row in enumerate(a @ p.T):
        order = sorted(range(len(row)), key=lambda j: (-row[j], j != i))  # a tie ranks the right one last
        order = [j for j in order if j != i]
        ranks.append(1 + sum(row[j] >= row[i] for j in order))
    ranks = np.array(ranks)
    return np.mean(ranks <= 1), np.mean(ranks <= 10), np.mean(np.where(ranks <= 10, 1.0 / ranks, 0.0))


def test_learns_retrieval_writes_its_figures_and_embeddings_exports_them_and_a_second_run_trains_nothing(
        tmp_path, model_dir):
    data = tmp_path / "pairs"
    dev, texts = write_pairs(data)
    out = tmp_path / "run"
    result = run_script("run_sentence_embedding.py", *_flags(model_dir, data, out, normalize=True))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Task embedder (mean pooling, normalized, similarity scale 20)" in result.stderr
    assert "Running training: 64 pairs with hard negatives, batch size 16, 80 steps" in result.stderr
    results = _results(out)
    assert set(results) == {"recall_at_1", "recall_at_10", "mrr_at_10", "eval_loss", "loss", "global_step"}
    assert results["global_step"] == 80 and results["recall_at_1"] >= 0.8  # chance: 1 in 20
    assert json.loads((out / "fine_tuning_task.json").read_text()) == {
        "kind": "embedder", "task_name": "sentence_embedding", "do_lower_case": True, "max_seq_length": 16,
        "pooling": "mean", "normalize": True, "similarity_scale": 20.0}
    embeddings = np.load(out / "test_embeddings.npy")
    assert embeddings.shape == (8, 32) and embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
    assert (out / "test_texts.txt").read_text(encoding="utf-8").splitlines() == texts

    # The dev figures restated: the run's model embeds the dev anchors and positives (a predict-only
    # run from its folder into another, no --normalize given: the run's own is taken), and numpy ranks them.
    again = tmp_path / "dev_as_test"
    again.mkdir()
    (again / "test.tsv").write_text("text\n" + "".join(f"{a}\n" for a, _ in dev) + "".join(f"{p}\n" for _, p in dev))
    elsewhere = tmp_path / "predicted"
    result = run_script("run_sentence_embedding.py", *_flags(model_dir, again, elsewhere, do_train=False, do_eval=False,
                                                               init_checkpoint=out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Task embedder (mean pooling, normalized, similarity scale 20)" in result.stderr
    vectors = np.load(elsewhere / "test_embeddings.npy")
    recall_1, recall_10, mrr_10 = _retrieval(vectors[:20], vectors[20:])
    assert results["recall_at_1"] == pytest.approx(recall_1, abs=1e-9)
    assert results["recall_at_10"] == pytest.approx(recall_10, abs=1e-9)
    assert results["mrr_at_10"] == pytest.approx(mrr_10, abs=1e-6)

    # The export serves the same vectors from text, with TensorFlow and tensorflow-text alone.
    import tensorflow as tf

    served = served_export("embedder", out, tmp_path / "export")(text_a=tf.constant(texts))
    np.testing.assert_allclose(served["embeddings"].numpy(), embeddings, atol=1e-5)

    # The same command again: the run is finished, nothing is trained; another pooling is refused,
    # for the run's own folder and from another.
    result = run_script("run_sentence_embedding.py", *_flags(model_dir, data, out, do_predict=False, normalize=True))
    assert result.returncode == 0, result.stderr[-3000:]
    assert _results(out) == results
    outcomes = run_main_cases("run_sentence_embedding", [
        _flags(model_dir, data, out, pooling="cls"),
        _flags(model_dir, again, tmp_path / "other", do_train=False, do_eval=False, init_checkpoint=out,
               normalize=False)])
    assert outcomes == [f"run_sentence_embedding.py: error: --pooling=cls but the embedding run {out} has pooling=mean",
                        f"run_sentence_embedding.py: error: --normalize=False but the embedding run {out} has "
                        "normalize=True"]


def test_lora_trains_the_adapters_alone_and_exports_merged_weights_that_embed_as_the_run(tmp_path, model_dir):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - its ops

    data = tmp_path / "pairs"
    write_pairs(data)
    out = tmp_path / "run"
    result = run_script("run_sentence_embedding.py", *_flags(model_dir, data, out, lora_rank=4, num_train_epochs=10))
    assert result.returncode == 0, result.stderr[-3000:]
    # No head: the adapters alone train, rank 4 on the 6 adapted layers of each of 2 blocks
    # (4 of 32 -> 32: 256 each; 32 -> 64 and 64 -> 32: 384 each), of the encoder's 20,224 and theirs.
    assert "Trainable parameters: 3,584 of 23,808 (15.05%)" in result.stderr
    record = json.loads((out / "fine_tuning_task.json").read_text())
    assert (record["lora_rank"], record["lora_alpha"]) == (4, 4.0)
    assert _results(out)["global_step"] == 40
    embeddings = np.load(out / "test_embeddings.npy")
    texts = (out / "test_texts.txt").read_text(encoding="utf-8").splitlines()

    # The export holds plain (merged) weights and embeds as the run predicted.
    export = tmp_path / "export"
    result = run_script("export_saved_model.py", "--export_type=embedder", f"--init_checkpoint={out}",
                        f"--export_dir={export}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert not [name for name, _ in tf.train.list_variables(str(export / "variables" / "variables")) if "lora" in name]
    served = tf.saved_model.load(str(export)).signatures["serving_default"](text_a=tf.constant(texts))
    np.testing.assert_allclose(served["embeddings"].numpy(), embeddings, atol=1e-5)


def write_st_folder(directory, pooling="mean", normalize=True, max_seq_length=12, seed=3, modules=None, vocab=VOCAB,
                    config=CONFIG):
    """A sentence-transformers folder of `config` as all-MiniLM-L6-v2's is laid out: the BERT module
    at the top (config.json, model.safetensors, `vocab`, uncased), modules.json, the Pooling config,
    sentence_bert_config.json; `modules`: another modules.json list."""
    weights = random_weights(original_shapes(config, with_heads=False), seed=seed)
    write_folder(directory, weights, config, "BertModel", vocab=vocab, do_lower_case=True)
    for name, value in st.module_files(pooling, normalize, max_seq_length, config.hidden_size).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(json.dumps(value, indent=2))
    if normalize:
        (directory / st.NORMALIZE_FOLDER).mkdir(exist_ok=True)
    if modules is not None:
        (directory / st.MODULES_FILE).write_text(json.dumps(modules))
    return directory


def test_a_sentence_transformers_folder_gives_its_settings_and_an_sts_dev_file_gives_correlations(tmp_path):
    folder = write_st_folder(tmp_path / "st", pooling="max", normalize=True, max_seq_length=12)
    data = tmp_path / "sts"
    data.mkdir()
    rng = random.Random(1)
    pairs = [(_sentence(rng, rng.choice(TOPICS)), _sentence(rng, rng.choice(TOPICS)), i / 4) for i in range(21)]
    (data / "dev.tsv").write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in pairs))
    (data / "test.tsv").write_text("id\ttext\n" + "".join(f"{i}\t{t}\n" for i, t in enumerate(
        [a for a, _, _ in pairs] + [b for _, b, _ in pairs])))
    out = tmp_path / "eval"
    result = run_script("run_sentence_embedding.py", "--do_eval", "--do_predict", f"--data_dir={data}",
                        f"--init_checkpoint={folder}", f"--output_dir={out}", "--noprogress")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Task embedder (max pooling, normalized, similarity scale 20)" in result.stderr
    results = _results(out)
    assert set(results) == {"spearman", "pearson", "global_step"}
    vectors = np.load(out / "test_embeddings.npy")
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)  # the Normalize module
    cosine = np.sum(vectors[:21] * vectors[21:], axis=1)
    rank = lambda x: np.argsort(np.argsort(x))  # noqa: E731 - distinct values here
    expected = np.corrcoef(rank(cosine), rank(np.array([s for *_, s in pairs])))[0, 1]
    assert results["spearman"] == pytest.approx(expected, abs=1e-6)
    assert results["pearson"] == pytest.approx(np.corrcoef(cosine, [s for *_, s in pairs])[0, 1], abs=1e-5)

    # Flags that disagree with the folder's modules, and modules we cannot compute: one line each.
    dense = write_st_folder(tmp_path / "dense", modules=[
        {"idx": 0, "name": "0", "path": "", "type": st.TRANSFORMER},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": st.POOLING},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])
    too_long = write_st_folder(tmp_path / "too_long", max_seq_length=1000)  # its model has 24 positions
    base = ["--do_eval", f"--data_dir={data}", "--noprogress"]
    cases = [
        base + [f"--init_checkpoint={folder}", "--pooling=mean", f"--output_dir={tmp_path / 'b1'}"],
        base + [f"--init_checkpoint={too_long}", f"--output_dir={tmp_path / 'b2'}"],
        base + [f"--init_checkpoint={folder}", "--normalize=false", f"--output_dir={tmp_path / 'b3'}"],
        base + [f"--init_checkpoint={dense}", f"--output_dir={tmp_path / 'b4'}"],
    ]
    outcomes = run_main_cases("run_sentence_embedding", cases)
    assert [outcome.removeprefix("run_sentence_embedding.py: error: ") for outcome in outcomes] == [
        f"--pooling=mean but the sentence-transformers folder {folder} has pooling=max",
        f"--init_checkpoint: {too_long / 'sentence_bert_config.json'}: max_seq_length=1000 is more than the model's "
        f"max_position_embeddings=24 ({too_long / 'config.json'}): give --max_seq_length of that many or less",
        f"--normalize=False but the sentence-transformers folder {folder} has normalize=True",
        f"--init_checkpoint: {dense / 'modules.json'}: its module sentence_transformers.models.Dense (path '2_Dense') "
        "is not one bert_tf computes: a BERT Transformer, a Pooling module, optionally Normalize",
    ]
    assert not any((tmp_path / f"b{i}").exists() for i in range(1, 5))


def _in_subfolder(folder, modules=None):
    """The sentence-transformers folder `folder` as older sentence-transformers saved it: the BERT
    module's files in 0_Transformer/, modules.json naming that path (`modules`: another list)."""
    inner = folder / "0_Transformer"
    inner.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", st.TRANSFORMER_CONFIG):
        (folder / name).rename(inner / name)
    listed = json.loads((folder / st.MODULES_FILE).read_text())
    listed[0]["path"] = "0_Transformer"
    (folder / st.MODULES_FILE).write_text(json.dumps(modules or listed))
    return folder


def test_a_folder_with_its_bert_module_in_a_subfolder_exports_extracts_and_converts_as_the_flat_one(tmp_path):
    import tensorflow as tf

    from bert_tf.checkpoints import load_keras_model

    settings = dict(pooling="max", normalize=True, max_seq_length=12, seed=5)
    flat = write_st_folder(tmp_path / "flat", **settings)
    nested = _in_subfolder(write_st_folder(tmp_path / "nested", **settings))
    dense = _in_subfolder(write_st_folder(tmp_path / "dense"), modules=[
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": st.TRANSFORMER},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": st.POOLING},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])
    refused = (f"{dense / 'modules.json'}: its module sentence_transformers.models.Dense (path '2_Dense') is not one "
               "bert_tf computes: a BERT Transformer, a Pooling module, optionally Normalize")
    texts = ["the red apple is on a big stone", "a tiger near the river", " ".join(TOPICS)]  # the last one is cut
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")

    def export(folder, name):
        return ["--export_type=embedder", f"--init_checkpoint={folder}", f"--export_dir={tmp_path / name}"]

    exported = run_main_cases("export_saved_model", [export(flat, "e_flat"), export(nested, "e_nested"),
                                                     export(dense, "e_dense")])

    def extract(folder, name):
        return [f"--init_checkpoint={folder}", f"--input_file={tmp_path / 'texts.txt'}", "--layers=-1,-2",
                "--max_seq_length=12", f"--output_file={tmp_path / name}"]

    extracted = run_main_cases("extract_features", [extract(flat, "flat.jsonl"), extract(nested, "nested.jsonl"),
                                                    extract(dense, "dense.jsonl")])

    def convert(direction, folder, output):
        return [f"--direction={direction}", f"--checkpoint_to_convert={folder}",
                f"--converted_checkpoint_path={tmp_path / output}"]

    converted = run_main_cases("convert_checkpoint", [convert("to_hf", nested, "hf"),
                                                      convert("to_keras", nested, "nested.keras"),
                                                      convert("to_hf", dense, "dense_hf")])
    assert exported[:2] == extracted[:2] == converted[:2] == ["ok", "ok"]
    # A module bert_tf cannot compute is refused by each script, in one line naming it, before any work.
    for outcome, script, flag in ((exported[2], "export_saved_model", "init_checkpoint"),
                                  (extracted[2], "extract_features", "init_checkpoint"),
                                  (converted[2], "convert_checkpoint", "checkpoint_to_convert")):
        assert outcome == f"{script}.py: error: --{flag}: {refused}", outcome
    assert not any((tmp_path / name).exists() for name in ("e_dense", "dense.jsonl", "dense_hf"))

    # The same model whichever the layout: its exports embed alike, normalized; its token vectors are equal.
    embeddings = [tf.saved_model.load(str(tmp_path / name)).signatures["serving_default"](
        text_a=tf.constant(texts))["embeddings"].numpy() for name in ("e_flat", "e_nested")]
    np.testing.assert_array_equal(embeddings[1], embeddings[0])
    np.testing.assert_allclose(np.linalg.norm(embeddings[1], axis=1), 1.0, atol=1e-5)
    assert (tmp_path / "nested.jsonl").read_text() == (tmp_path / "flat.jsonl").read_text()
    # Converted: the flat layout, with the nested folder's modules; a .keras file of the same embedder.
    written = st.read_modules(str(tmp_path / "hf"))
    assert (written.pooling, written.normalize, written.max_seq_length) == ("max", True, 12)
    assert os.path.samefile(written.transformer, tmp_path / "hf")
    model = load_keras_model(str(tmp_path / "nested.keras"))
    assert (type(model).__name__, model.pooling, model.normalize) == ("BertSentenceEmbedder", "max", True)


def test_bad_input_fails_before_training_naming_the_file_flag_or_value(tmp_path, model_dir):
    good = tmp_path / "good"
    write_pairs(good)

    def data(name, **files):
        d = tmp_path / name
        d.mkdir()
        for split in ("train", "dev", "test"):
            (d / f"{split}.tsv").write_text(files.get(split, (good / f"{split}.tsv").read_text()))
        return d

    one_pair = data("one", train="anchor\tpositive\na b\tc d\n")
    no_positive = data("nopos", train="anchor\tnegative\na\tb\n")
    bad_score = data("score", dev="sentence1\tsentence2\tscore\na\tb\thigh\n")
    no_text = data("notext", test="sentence\nthe cat\n")
    lines = (good / "train.tsv").read_text().splitlines()
    lines[4] = "\t" + lines[4].split("\t", 1)[1]  # line 5's anchor
    empty_anchor = data("noanchor", train="\n".join(lines) + "\n")
    copied = data("copied", train="anchor\tpositive\n" + "a red apple\tthe apple is red\n" * 64)
    own_negative = data("ownneg", train="anchor\tpositive\tnegative\na\tb\tc\nd\te\te\n")
    blank_dev = data("blankdev", dev="anchor\tpositive\na\tb\n \tc\n")
    repeated_dev = data("repdev", dev="anchor\tpositive\na\tb\nc\tb\n")
    same_scores = data("samescores", dev="sentence1\tsentence2\tscore\na\tb\t3\nc\td\t3.0\n")
    cases = [
        (dict(data_dir=None), "--data_dir (train.tsv, dev.tsv, test.tsv) is required"),
        (dict(data_dir=one_pair), f"--data_dir={one_pair}: train.tsv has 1 pair; in-batch negatives need at least 2"),
        (dict(data_dir=no_positive), f"{no_positive / 'train.tsv'}:1: no column 'positive' in the header ('anchor', "
                                     "'negative'); expected anchor positive"),
        (dict(data_dir=bad_score), f"{bad_score / 'dev.tsv'}:2: score 'high' is not a number"),
        (dict(data_dir=no_text), f"{no_text / 'test.tsv'}:1: no column 'text' in the header ('sentence'); "
                                 "expected text"),
        (dict(data_dir=empty_anchor), f"{empty_anchor / 'train.tsv'}:5: the 'anchor' cell is empty or blank; every "
                                      "pair needs its texts"),
        # 64 copies of one pair: each batch's positives all alike, every anchor's own among its negatives.
        (dict(data_dir=copied), f"{copied / 'train.tsv'}: 63 of 64 pairs (98.4%) repeat an earlier pair's positive "
                                "(first: line 3 repeats line 2), more than the 10% allowed: in a batch with its twin, "
                                "an anchor's own positive is also among its negatives; remove the repeats"),
        (dict(data_dir=own_negative), f"{own_negative / 'train.tsv'}:3: the negative is the pair's own positive; a "
                                      "hard negative must differ from it"),
        (dict(data_dir=blank_dev), f"{blank_dev / 'dev.tsv'}:3: the 'anchor' cell is empty or blank; every pair "
                                   "needs its texts"),
        (dict(data_dir=repeated_dev), f"{repeated_dev / 'dev.tsv'}:3: the positive of line 2 again: two equal "
                                      "positives tie, so neither pair's anchor can rank its own first; give each "
                                      "text once"),
        (dict(data_dir=same_scores), f"{same_scores / 'dev.tsv'}: the scores are all equal (3), so no correlation "
                                     "with the similarities is defined; a scored dev file needs at least two "
                                     "different scores"),
        (dict(similarity_scale=0), "--similarity_scale=0.0 must be positive"),
        (dict(train_batch_size=1), "--train_batch_size=1: in-batch negatives need at least 2 pairs per batch (each "
                                   "anchor's candidates are the batch's positives)"),
        (dict(train_batch_size=100), f"--train_batch_size=100 is more than the 64 pairs of {good}/train.tsv: a batch "
                                     "would hold a pair twice, its own positive among its negatives"),
        (dict(group_by_length=True), "--group_by_length is not offered for sentence embeddings: a batch's rows are "
                                     "each other's negatives, and grouping by length would make them alike"),
        (dict(pooling="sum"), "flags parsing error"),
    ]
    argvs = [_flags(model_dir, values.get("data_dir", good), tmp_path / f"out{i}",
                    **{k: v for k, v in values.items() if k != "data_dir"}) for i, (values, _) in enumerate(cases)]
    argvs[0] = [a for a in argvs[0] if not a.startswith("--data_dir")]
    outcomes = run_main_cases("run_sentence_embedding", argvs[:-1])
    for (_, message), outcome in zip(cases[:-1], outcomes, strict=True):
        assert outcome == f"run_sentence_embedding.py: error: {message}"
    assert not any((tmp_path / f"out{i}").exists() for i in range(len(cases) - 1))
    result = run_script("run_sentence_embedding.py", *argvs[-1])
    assert result.returncode == 1 and "flag --pooling=sum: value should be one of <mean|cls|max|mean_sqrt_len>" in \
        result.stderr


def test_finite_vectors_too_large_to_square_in_float32_give_the_figures_of_their_directions(tmp_path, model_dir):
    """A model whose last LayerNorm is scaled by 1e25 embeds as the unscaled one times 1e25: finite
    vectors (so the run goes on) whose squares overflow float32, which once made every cosine 0 (a
    retrieval figure of 0) or NaN (a Pearson of NaN, a Spearman of the file's order)."""
    weights = random_weights(original_shapes(CONFIG, with_heads=False), seed=4)
    for name in ("gamma", "beta"):
        weights[f"bert/encoder/layer_1/output/LayerNorm/{name}"] *= np.float32(1e25)
    write_tf1_checkpoint(model_dir / "bert_model.ckpt", weights)
    dev, _ = write_pairs(tmp_path / "pairs")
    (tmp_path / "pairs" / "test.tsv").write_text("text\n" + "".join(f"{a}\n" for a, _ in dev) +
                                                 "".join(f"{p}\n" for _, p in dev))
    sts = tmp_path / "sts"
    sts.mkdir()
    (sts / "dev.tsv").write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{p}\t{i % 7}\n" for i, (a, p) in
                                                                         enumerate(dev)))
    (sts / "test.tsv").write_text((tmp_path / "pairs" / "test.tsv").read_text())
    outcomes = run_main_cases("run_sentence_embedding", [
        _flags(model_dir, data, tmp_path / f"out_{data.name}", do_train=False,
               init_checkpoint=model_dir / "bert_model.ckpt") for data in (tmp_path / "pairs", sts)])
    assert outcomes == ["ok", "ok"]
    for name in ("pairs", "sts"):
        vectors = np.load(tmp_path / f"out_{name}" / "test_embeddings.npy").astype(np.float64)
        assert 1e19 < np.abs(vectors).max() < 1e38  # finite, their squares not
        anchors, positives = vectors[:20], vectors[20:]
        results = _results(tmp_path / f"out_{name}")
        if name == "pairs":
            recall_1, recall_10, mrr_10 = _retrieval(anchors, positives)
            assert mrr_10 > 0  # 0 is what the overflow gave
            assert results["recall_at_1"] == pytest.approx(recall_1, abs=1e-9)
            assert results["recall_at_10"] == pytest.approx(recall_10, abs=1e-9)
            assert results["mrr_at_10"] == pytest.approx(mrr_10, abs=1e-6)
        else:
            cosine = np.sum(anchors * positives, axis=1) / (np.linalg.norm(anchors, axis=1) *
                                                            np.linalg.norm(positives, axis=1))
            scores = np.array([i % 7 for i in range(20)], float)
            rank = lambda x: np.array([np.sum(x < v) + (np.sum(x == v) + 1) / 2 for v in x])  # noqa: E731 - ties: mean
            assert results["pearson"] == pytest.approx(np.corrcoef(cosine, scores)[0, 1], abs=1e-5)
            assert results["spearman"] == pytest.approx(np.corrcoef(rank(cosine), rank(scores))[0, 1], abs=1e-5)


def test_the_pairs_set_is_whole_tokens_and_no_scene_repeats():
    pairs = os.path.join(REPO, "data", "pairs")
    tokenizer = tokenization.FullTokenizer(os.path.join(REPO, "data", "vocab.txt"), do_lower_case=True)
    texts = []
    for name, columns in (("train", 3), ("dev", 2), ("test", 1)):
        lines = open(os.path.join(pairs, f"{name}.tsv"), encoding="utf-8").read().splitlines()
        assert all(len(line.split("\t")) == columns for line in lines), name
        texts += [cell for line in lines[1:] for cell in line.split("\t")]
    for text in texts:
        assert tokenizer.tokenize(text) == re.findall(r"\w+|[^\w\s]", text.lower()), text  # no [UNK], no pieces
    anchors = [line.split("\t")[0] for name in ("train", "dev") for line in
               open(os.path.join(pairs, f"{name}.tsv"), encoding="utf-8").read().splitlines()[1:]]
    assert len(set(anchors)) == len(anchors) == 380


def test_fine_tuning_a_pretrained_encoder_on_the_pairs_set_retrieves_better_than_before(tmp_path):
    """Pre-training on data/corpus.txt (a short run), then the pairs set of data/: recall@1 on its dev
    set before fine-tuning (the pre-trained encoder, mean-pooled) and after."""
    data, config, vocab = (os.path.join(REPO, "data", name) for name in ("pairs", "bert_config_tiny.json", "vocab.txt"))
    records, pretrained = tmp_path / "train.tfrecord", tmp_path / "pretrained"
    result = run_script("create_pretraining_data.py", f"--input_file={os.path.join(REPO, 'data', 'corpus.txt')}",
                        f"--output_file={records}", f"--vocab_file={vocab}", "--max_seq_length=64",
                        "--max_predictions_per_seq=10", "--dupe_factor=2")
    assert result.returncode == 0, result.stderr[-3000:]
    result = run_script("run_pretraining.py", f"--input_file={records}", f"--output_dir={pretrained}", "--do_train",
                        f"--bert_config_file={config}", "--train_batch_size=32", "--max_seq_length=64",
                        "--max_predictions_per_seq=10", "--num_train_steps=40", "--num_warmup_steps=4",
                        "--learning_rate=1e-3", "--steps_per_execution=40", "--noprogress")
    assert result.returncode == 0, result.stderr[-3000:]
    common = [f"--data_dir={data}", f"--vocab_file={vocab}", f"--bert_config_file={config}", "--max_seq_length=32",
              "--noprogress"]
    before = tmp_path / "before"
    result = run_script("run_sentence_embedding.py", "--do_eval", f"--init_checkpoint={pretrained}",
                        f"--output_dir={before}", *common)
    assert result.returncode == 0, result.stderr[-3000:]
    after = tmp_path / "after"
    result = run_script("run_sentence_embedding.py", "--do_train", "--do_eval", f"--init_checkpoint={pretrained}",
                        f"--output_dir={after}", "--train_batch_size=32", "--learning_rate=5e-4",
                        "--num_train_epochs=3", *common)
    assert result.returncode == 0, result.stderr[-3000:]
    untuned, tuned = _results(before), _results(after)
    assert tuned["recall_at_1"] > untuned["recall_at_1"] and tuned["mrr_at_10"] > untuned["mrr_at_10"], (untuned, tuned)


def _long(rng, words, topic):
    text = [rng.choice(FILL) for _ in range(words)]
    text[rng.randrange(words)] = topic
    return " ".join(text)


def test_long_texts_are_embedded_over_windows_in_the_run_and_its_export(tmp_path, model_dir):
    import tensorflow as tf

    rng = random.Random(5)
    data = tmp_path / "long"
    data.mkdir()
    # The topic word anywhere in 10 to 20 words: past the first window of 12 positions in half.
    train = [(_long(rng, rng.randrange(10, 21), t), _long(rng, rng.randrange(10, 21), t)) for t in TOPICS * 3]
    (data / "train.tsv").write_text("anchor\tpositive\n" + "".join(f"{a}\t{p}\n" for a, p in train))
    dev = [(_long(rng, 15, t), _long(rng, 15, t)) for t in TOPICS]
    (data / "dev.tsv").write_text("anchor\tpositive\n" + "".join(f"{a}\t{p}\n" for a, p in dev))
    texts = [_long(rng, n, "river") for n in (1, 4, 9, 35, 600)]
    (data / "test.tsv").write_text("text\n" + "".join(f"{t}\n" for t in texts))
    out = tmp_path / "run"
    flags = dict(max_seq_length=12, max_windows=100, doc_stride=5, normalize=True, num_train_epochs=30)
    result = run_script("run_sentence_embedding.py", *_flags(model_dir, data, out, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    # 1, 1, 1, 1 + ceil(25 / 5) and 1 + ceil(590 / 5) windows, the last cut at 100.
    assert "test: 5 texts in 109 windows (at most 100); 1 cut at --max_windows=100" in result.stderr
    assert _results(out)["recall_at_1"] >= 0.3  # chance: 1 in 20
    record = json.loads((out / "fine_tuning_task.json").read_text())
    assert (record["max_windows"], record["doc_stride"]) == (100, 5)
    embeddings = np.load(out / "test_embeddings.npy")
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)

    # The export: the same vectors, from text of any length.
    served = served_export("embedder", out, tmp_path / "export")(text_a=tf.constant(texts))
    np.testing.assert_allclose(served["embeddings"].numpy(), embeddings, atol=1e-5)
    assert served["windows"].numpy().tolist() == [1, 1, 1, 6, 100]

    # Read with one window, a text that fits keeps its vector.
    one = tmp_path / "one"
    result = run_script("run_sentence_embedding.py", *_flags(model_dir, data, one, **{
        **flags, "do_train": False, "do_eval": False, "init_checkpoint": out, "max_windows": 1}))
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(np.load(one / "test_embeddings.npy")[:3], embeddings[:3], atol=1e-6)
