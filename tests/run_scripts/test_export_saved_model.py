"""export_saved_model.py end to end: every export type from what the training scripts leave, loaded
in a fresh process that imports only TensorFlow and tensorflow-text, equal to the Keras model on
the same text (its inputs built by the original's Python rules, restated here; text-in outputs
along the sequence as long as the request's longest sequence rounded up to --length_bucket, or
--seq_length with --pad_to_max_seq_length); an int8 + XLA export; a float export taking this
machine's measured XLA choice from the speed file, a given value winning over it; saved_model_cli;
the TF Hub KerasLayer path under tf-keras; a mixed-precision model; overwriting; bad input failing
before anything is written. The exports are written once, by the script, for all the tests."""

import concurrent.futures
import itertools
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import (
    BertClassifier,
    BertEncoder,
    BertMultipleChoice,
    BertSentenceEmbedder,
    BertSpanLabeler,
    BertTokenClassifier,
)
from bert_tf.checkpoints import restore, save_keras_model
from bert_tf.preprocessing import BertTokenizer
from bert_tf.tasks.ner.conll import Sentence
from bert_tf.tasks.ner.inputs import encode_sentences, tags_of
from bert_tf.tokenization import FullTokenizer
from bert_tf.training import speed
from tests.peers import installed_peers
from tests.run_scripts.conftest import run_main_cases, run_script
from tests.tf1_checkpoint import original_shapes, random_weights, write_tf1_checkpoint
from tests.tiny import VOCAB, tiny_config, write_vocab

pytestmark = pytest.mark.slow

LABELS = ["contradiction", "entailment", "neutral"]
TAGS = ["O", "B-PER", "I-PER"]
# What each fine-tuning script writes to fine_tuning_task.json (run_classifier, run_squad, run_ner,
# run_swag), at lengths the tiny config allows.
RECORDS = {
    "classifier": {"task_name": "mnli", "kind": "classifier", "label_kind": "single", "labels": LABELS,
                   "pair": True, "do_lower_case": True, "max_seq_length": 16},
    "squad": {"task_name": "squad", "kind": "squad", "version_2_with_negative": False,
              "do_lower_case": True, "max_seq_length": 20, "doc_stride": 8, "max_query_length": 6},
    "ner": {"task_name": "ner", "kind": "ner", "label_kind": "token", "labels": TAGS,
            "do_lower_case": True, "max_seq_length": 8, "window_context_words": 2},
    "swag": {"task_name": "swag", "kind": "swag", "num_choices": 4, "do_lower_case": True,
             "max_seq_length": 12},
    "embedder": {"task_name": "sentence_embedding", "kind": "embedder", "do_lower_case": True, "max_seq_length": 16,
                 "pooling": "mean", "normalize": True, "similarity_scale": 20.0},
}
WORDS = [w for w in VOCAB[5:] if not w.startswith("##")] + ["Runs", "unwanted", "Zoë", "猫", "cat's", "mat!"]


def _sentences(n, seed, low=1, high=14):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(low, high))) for _ in range(n)]


def _scramble(model, seed):
    """Weights far from the initializer's (decisive outputs, and a mis-mapped variable shows)."""
    rng = np.random.default_rng(seed)
    for v in model.trainable_variables:
        scale = 0.3 if "gamma" not in v.path else 0.2
        base = 1.0 if "gamma" in v.path else 0.0
        v.assign((base + scale * rng.standard_normal(v.shape)).astype(np.float32))


def _fine_tuned_run(directory, record, model):
    """A folder as a fine-tuning script leaves it: the task record, bert_config.json, vocab.txt
    and the loop's checkpoint (the model saved as "model", ckpt-N)."""
    directory.mkdir()
    (directory / "fine_tuning_task.json").write_text(json.dumps(record, indent=2))
    model.encoder.bert_config().to_json_file(str(directory / "bert_config.json"))
    write_vocab(directory / "vocab.txt")
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(directory), 3, checkpoint_name="ckpt").save(12)
    return directory


def _sources(root):
    """Google's layout for the encoder, and one run folder per fine-tuned model kind."""
    config = tiny_config()
    google = root / "uncased_tiny"
    google.mkdir()
    (google / "bert_config.json").write_text(json.dumps(config.to_dict()))
    write_vocab(google / "vocab.txt")
    write_tf1_checkpoint(google / "bert_model.ckpt", random_weights(original_shapes(config, with_heads=False), seed=3))
    encoder = BertEncoder.from_bert_config(config)
    restore(encoder, str(google / "bert_model.ckpt"))
    # A mixed-precision encoder in a .keras file (which carries its config).
    bf16 = BertEncoder.from_bert_config(config, dtype="mixed_bfloat16")
    bf16.set_weights(encoder.get_weights())
    save_keras_model(bf16, str(root / "encoder_bf16.keras"))
    models = {
        "classifier": BertClassifier(BertEncoder.from_bert_config(config), num_classes=len(LABELS)),
        "squad": BertSpanLabeler(BertEncoder.from_bert_config(config)),
        "ner": BertTokenClassifier(BertEncoder.from_bert_config(config), num_classes=len(TAGS)),
        "swag": BertMultipleChoice(BertEncoder.from_bert_config(config), num_choices=4),
        "embedder": BertSentenceEmbedder(BertEncoder.from_bert_config(config), "mean", normalize=True),
    }
    runs = {}
    for i, (kind, model) in enumerate(models.items()):
        _scramble(model, seed=i)
        runs[kind] = _fine_tuned_run(root / f"{kind}_run", RECORDS[kind], model)
    # A run record beside a checkpoint without the head (pre-trained weights only).
    headless = root / "headless_run"
    headless.mkdir()
    for name in ("bert_config.json", "vocab.txt", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        (headless / name).write_bytes((google / name).read_bytes())
    (headless / "fine_tuning_task.json").write_text(json.dumps(RECORDS["classifier"]))
    other = root / "other_config.json"
    other.write_text(json.dumps(tiny_config(hidden_size=16, intermediate_size=32).to_dict()))
    return types.SimpleNamespace(
        google=google, encoder=encoder, bf16=bf16, models=models, runs=runs, headless=headless, other=other
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every export type written by the script, and the bad cases; their outcomes by case."""
    root = tmp_path_factory.mktemp("export")
    sources = _sources(root)
    out = root / "exports"
    occupied = out / "occupied"
    occupied.mkdir(parents=True)
    (occupied / "marker").write_text("an older export")
    (occupied / "saved_model.pb").write_bytes(b"")  # what makes it one
    (out / "preprocessor").mkdir()  # an empty folder made for an export: written into without --overwrite
    searched = root / "search"  # a fine-tuning search's folder: its runs in subfolders, `best` the chosen one
    searched.mkdir()
    (searched / "search.json").write_text('{"random_seed": 12345, "runs": []}')
    swapped_vocab = root / "swapped_vocab.txt"
    write_vocab(swapped_vocab, VOCAB[:5] + [VOCAB[6], VOCAB[5]] + VOCAB[7:])
    g = sources.google
    cases = {
        "encoder": ["--export_type=encoder", f"--bert_config_file={g}/bert_config.json",
                    f"--init_checkpoint={g}/bert_model.ckpt", f"--export_dir={out}/encoder"],
        "preprocessor": ["--export_type=preprocessor", f"--vocab_file={g}/vocab.txt", "--seq_length=16",
                         f"--export_dir={out}/preprocessor"],
        **{kind: [f"--export_type={kind}", f"--init_checkpoint={run}", f"--export_dir={out}/{kind}"]
           for kind, run in sources.runs.items()},
        "encoder_bf16": ["--export_type=encoder", f"--init_checkpoint={root}/encoder_bf16.keras",
                         f"--export_dir={out}/encoder_bf16"],
        # One of our checkpoints (a fine-tuning run's folder): its encoder, config and vocab.
        "encoder_from_run": ["--export_type=encoder", f"--init_checkpoint={sources.runs['classifier']}",
                             f"--export_dir={out}/encoder_from_run"],
        # Bad input: each fails with one line, before anything is written.
        "config_mismatch": ["--export_type=encoder", f"--bert_config_file={sources.other}",
                            f"--init_checkpoint={g}/bert_model.ckpt", f"--export_dir={out}/bad1"],
        "missing_vocab": ["--export_type=preprocessor", f"--vocab_file={root}/nowhere/vocab.txt",
                          f"--export_dir={out}/bad2"],
        "task_missing_vocab": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                               f"--vocab_file={root}/nowhere/vocab.txt", f"--export_dir={out}/bad3"],
        "wrong_kind": ["--export_type=classifier", f"--init_checkpoint={sources.runs['squad']}",
                       f"--export_dir={out}/bad4"],
        "no_record": ["--export_type=ner", f"--init_checkpoint={g}/bert_model.ckpt", f"--export_dir={out}/bad5"],
        "no_head": ["--export_type=classifier", f"--init_checkpoint={sources.headless}", f"--export_dir={out}/bad6"],
        "casing": ["--export_type=swag", f"--init_checkpoint={sources.runs['swag']}", "--do_lower_case=false",
                   f"--export_dir={out}/bad7"],
        "too_long": ["--export_type=squad", f"--init_checkpoint={sources.runs['squad']}", "--seq_length=64",
                     f"--export_dir={out}/bad8"],
        "length_bucket": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                          "--length_bucket=0", f"--export_dir={out}/bad9"],
        "quantize_encoder": ["--export_type=encoder", f"--init_checkpoint={g}/bert_model.ckpt", "--quantize=int8",
                             f"--export_dir={out}/bad10"],
        "skip_with_xla": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                          "--skip_padding", "--serving_jit_compile", f"--export_dir={out}/bad11"],
        "skip_preprocessor": ["--export_type=preprocessor", f"--vocab_file={g}/vocab.txt", "--noskip_padding",
                              f"--export_dir={out}/bad12"],
        "bf16_int8": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                      "--mixed_precision=bf16", "--quantize=int8", f"--export_dir={out}/bad13"],
        "bf16_encoder": ["--export_type=encoder", f"--init_checkpoint={g}/bert_model.ckpt", "--mixed_precision=bf16",
                         f"--export_dir={out}/bad14"],
        "exists": ["--export_type=encoder", f"--bert_config_file={g}/bert_config.json",
                   f"--init_checkpoint={g}/bert_model.ckpt", f"--export_dir={occupied}"],
        "overwrite": ["--export_type=encoder", f"--bert_config_file={g}/bert_config.json",
                      f"--init_checkpoint={g}/bert_model.ckpt", f"--export_dir={occupied}", "--overwrite"],
        # --overwrite replaces an export, not another run's folder (its checkpoints and results).
        "overwrite_run": ["--export_type=encoder", f"--bert_config_file={g}/bert_config.json",
                          f"--init_checkpoint={g}/bert_model.ckpt", f"--export_dir={sources.runs['swag']}",
                          "--overwrite"],
        "bucket_fixed": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                         "--length_bucket=4", "--pad_to_max_seq_length", f"--export_dir={out}/bad15"],
        "bucket_above": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                         "--length_bucket=1000", f"--export_dir={out}/bad16"],
        "search_folder": ["--export_type=classifier", f"--init_checkpoint={searched}", f"--export_dir={out}/bad17"],
        # A vocabulary of the run's size with two tokens swapped: other ids for the same words, served silently.
        "other_vocab": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                        f"--vocab_file={swapped_vocab}", f"--export_dir={out}/bad18"],
        # Today's fixed length, and the int8 weights served through XLA.
        # (given: no XLA, whatever the second process's speed file says; its log line is kept.)
        "squad_fixed": ["--export_type=squad", f"--init_checkpoint={sources.runs['squad']}",
                        "--pad_to_max_seq_length", "--noserving_jit_compile", "--verbosity=0",
                        f"--export_dir={out}/squad_fixed"],
        "classifier_int8": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                            "--quantize=int8", "--serving_jit_compile", "--length_bucket=4",
                            f"--export_dir={out}/classifier_int8"],
        # Float weights, --serving_jit_compile unset: this machine's measured choice (on, in the
        # second process's speed file); the preprocessor (no model part) logs no XLA choice.
        "classifier_measured": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                                "--verbosity=0", f"--export_dir={out}/classifier_measured"],
        # bfloat16 weights and products: XLA off whatever the speed file says.
        "classifier_bf16": ["--export_type=classifier", f"--init_checkpoint={sources.runs['classifier']}",
                            "--mixed_precision=bf16", "--verbosity=0", f"--export_dir={out}/classifier_bf16"],
    }
    cases["preprocessor"].append("--verbosity=0")
    # The second process reads a speed file saying "XLA on for float serving" for this machine, and
    # writes the INFO lines of the cases given --verbosity=0 to a file of their own.
    speed_file, log = root / "speed" / "defaults.json", root / "second.log"
    speed_file.parent.mkdir()
    speed_file.write_text(json.dumps({"signature": speed.machine_signature("cpu"),
                                      "choices": {"serving_jit_compile": {"value": True}}}))
    prelude = (f"import logging, os\nos.environ['BERT_TF_SPEED_FILE'] = {str(speed_file)!r}\n"
               f"logging.getLogger('absl').addHandler(logging.FileHandler({str(log)!r}))")
    # Two processes side by side (a process uses about one core): the task exports, and the rest.
    first = [*sources.runs, "encoder_from_run"]
    groups = [[k for k in cases if k in first], [k for k in cases if k not in first]]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda group, prelude: run_main_cases("export_saved_model", [cases[k] for k in group],
                                                              prelude=prelude), groups, ["", prelude])
        outcomes = {
            k: outcome
            for group, results in zip(groups, done, strict=True)
            for k, outcome in zip(group, results, strict=True)
        }
    return types.SimpleNamespace(root=root, out=out, sources=sources, outcomes=outcomes, speed_file=speed_file,
                                 log=log)


# -------------------------------------------------------------------------------------------------
# The fresh process: tensorflow + tensorflow_text only.

_LOADER = r"""
import contextlib, io, json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 - the tokenizer's ops
from tensorflow.python.tools import saved_model_cli

work = sys.argv[1]
requests = json.load(open(work + "/requests.json"))


def plain(x):
    if isinstance(x, tf.RaggedTensor):
        return x.to_list()
    x = np.asarray(x)
    return np.char.decode(x.astype(bytes), "utf-8").tolist() if x.dtype == object else x.tolist()


def run(fn, kwargs):
    outputs = fn(**{k: tf.constant(v) for k, v in kwargs.items()})
    return {
        **{k: plain(v) for k, v in outputs.items()},
        "dtypes": {k: v.dtype.name for k, v in outputs.items()},
        "shapes": {k: v.shape.as_list() for k, v in outputs.items()},
    }


results, listings = {}, {}
for name, calls in requests.items():
    obj = tf.saved_model.load(f"{work}/{name}")
    serve = obj.signatures["serving_default"]
    for label, kwargs in calls.items():
        results[f"{name}/{label}"] = run(serve, kwargs)
    assets = {key: open(getattr(obj, key).asset_path.numpy().decode(), encoding="utf-8").read()
              for key in ("vocab_file", "bert_config_file", "task_file", "serving_file") if hasattr(obj, key)}
    results[f"{name}/assets"] = assets
    results[f"{name}/object_types"] = sorted({type(o).__module__ for o in [obj, *obj.variables]})
    if name == "preprocessor":
        texts = tf.constant(calls["b64"]["text"])
        results["preprocessor/call"] = run(obj, {"text": calls["b64"]["text"]})
        pieces = obj.tokenize(texts)
        results["preprocessor/tokenize"] = {"ragged_rank": pieces.ragged_rank, "pieces": plain(pieces)}
        a, b = obj.tokenize(texts[:32]), obj.tokenize(texts[32:])
        results["preprocessor/pair_12"] = {k: plain(v) for k, v in obj.bert_pack_inputs([a, b], seq_length=12).items()}
        results["preprocessor/flat_single"] = {
            k: plain(v) for k, v in obj.bert_pack_inputs([a.merge_dims(1, 2)]).items()}
        results["preprocessor/special"] = {k: int(v) for k, v in obj.tokenize.get_special_tokens_dict().items()}
    if name == "encoder":
        inputs = {k: tf.constant(v) for k, v in calls["b64"].items()}
        results["encoder/call"] = {k: plain(v) for k, v in obj(inputs).items() if k != "encoder_outputs"}
        results["encoder/call_layers"] = [plain(x) for x in obj(inputs)["encoder_outputs"]]
        results["encoder/dropout"] = plain(obj(inputs, training=True)["pooled_output"])
        results["encoder/counts"] = [len(obj.variables), len(obj.trainable_variables), bool(obj.do_lower_case.numpy())]
    out = io.StringIO()
    # `--all` also loads the model to list its functions (seconds each): two of them show it all.
    what = ["--all"] if name in ("encoder", "classifier") else [
        "--tag_set", "serve", "--signature_def", "serving_default"
    ]
    sys.argv = ["saved_model_cli", "show", "--dir", f"{work}/{name}", *what]
    with contextlib.redirect_stdout(out):
        try:
            saved_model_cli.main()
        except SystemExit:
            pass
    listings[name] = out.getvalue()
results["modules"] = sorted(m for m in sys.modules if m == "bert_tf" or m.startswith("bert_tf."))
json.dump({"results": results, "listings": listings}, open(work + "/results.json", "w"))
"""


def _python_pack(tokenizer, text_a, text_b, seq_length):
    """The original's convert_single_example on one example: ids, mask, type ids (lists)."""
    a = tokenizer.tokenize(text_a)
    b = tokenizer.tokenize(text_b) if text_b else []
    if b:
        while len(a) + len(b) > seq_length - 3:  # _truncate_seq_pair: the longer loses a token
            (a if len(a) > len(b) else b).pop()
    else:
        a = a[: seq_length - 2]
    tokens = ["[CLS]", *a, "[SEP]"] + ([*b, "[SEP]"] if b else [])
    types_ = [0] * (len(a) + 2) + [1] * (len(b) + 1 if b else 0)
    pad = seq_length - len(tokens)
    return tokenizer.convert_tokens_to_ids(tokens) + [0] * pad, [1] * len(tokens) + [0] * pad, types_ + [0] * pad


def _packed(tokenizer, texts_a, texts_b, seq_length):
    pairs = zip(texts_a, texts_b or [None] * len(texts_a), strict=True)
    rows = [_python_pack(tokenizer, a, b, seq_length) for a, b in pairs]
    return {
        name: np.array([r[i] for r in rows], np.int32)
        for i, name in enumerate(("input_word_ids", "input_mask", "input_type_ids"))
    }


def _requests():
    texts_a, texts_b = _sentences(64, seed=1, high=20), _sentences(64, seed=2)
    texts_b[5] = ""  # an example without B: packed as a single segment
    questions, contexts = _sentences(64, seed=3, high=10), _sentences(64, seed=4, high=30)
    ner_text = _sentences(64, seed=5, high=16)
    ner_text[3], ner_text[7] = "", "cat \u00ad dog"  # no words; a word of no pieces (a control: [UNK])
    choices = np.array(_sentences(256, seed=6, high=12)).reshape(64, 4).tolist()
    both = lambda kwargs: {"b1": {k: v[:1] for k, v in kwargs.items()}, "b64": kwargs}  # noqa: E731
    return {
        "preprocessor": both({"text": texts_a}),
        "classifier": both({"text_a": texts_a, "text_b": texts_b}),
        # "short": 8 pieces, which the default bucket of 16 pads to 16, not max_seq_length 20.
        "squad": {**both({"question": questions, "context": contexts}),
                  "short": {"question": ["the cat"], "context": ["a dog sat"]}},
        "ner": {**both({"text": ner_text}), "empty": {"text": ["", " "]}},
        "swag": both({"context": texts_a, "choices": choices}),
        "embedder": both({"text_a": texts_a}),
    }


@pytest.fixture(scope="module")
def loaded(request, exported):
    """What the exports give in a fresh process, and saved_model_cli's listings."""
    if any(
        item.name == "test_encoder_and_preprocessor_fine_tune_through_tf_hub_keras_layer"
        for item in request.session.items
    ):
        request.getfixturevalue("tf_hub_run")  # started first, so that the two processes overlap
    requests = _requests()
    vocab = str(exported.sources.google / "vocab.txt")
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    packed = {k: v.tolist() for k, v in _packed(tokenizer, requests["classifier"]["b64"]["text_a"], None, 16).items()}
    requests["encoder"] = {"b1": {k: v[:1] for k, v in packed.items()}, "b64": packed}
    requests["encoder_bf16"] = {"b64": packed}
    requests["squad_fixed"], requests["classifier_int8"] = requests["squad"], requests["classifier"]
    for kind in ("classifier_measured", "classifier_bf16"):
        requests[kind] = requests["classifier"]
    (exported.out / "requests.json").write_text(json.dumps(requests))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", _LOADER, str(exported.out)], capture_output=True, text=True, env=env, cwd="/",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((exported.out / "results.json").read_text())
    return types.SimpleNamespace(requests=requests, tokenizer=tokenizer, **report)


def test_every_export_type_is_written_and_bad_input_fails_before_anything_is_written(exported):
    outcomes = exported.outcomes
    for kind in ("encoder", "preprocessor", "classifier", "squad", "ner", "swag", "embedder", "encoder_bf16",
                 "encoder_from_run", "overwrite", "squad_fixed", "classifier_int8", "classifier_measured",
                 "classifier_bf16"):
        assert outcomes[kind] == "ok", (kind, outcomes[kind])
    expected = {
        "config_mismatch": "checkpoint has shape (32,), model expects (16,)",
        "missing_vocab": "nowhere/vocab.txt: no such file",
        "task_missing_vocab": "nowhere/vocab.txt: no such file",
        "wrong_kind": "holds a squad model (task 'squad'), not a classifier",
        "no_record": "no fine_tuning_task.json",
        "no_head": "has no trained BertClassifier head",
        "casing": "--do_lower_case=False, but the model",
        "too_long": "Cannot use sequence length 64 because the BERT model was only trained up to sequence length 24",
        "exists": "already exists (overwrite it with --overwrite)",
        "length_bucket": "--length_bucket=0 must be a positive integer",
        "quantize_encoder": "--quantize=int8 is for the task exports (classifier, squad, ner, swag, embedder), not "
                            "export_type=encoder",
        "skip_with_xla": "--skip_padding needs a serving function without XLA (--noserving_jit_compile)",
        "skip_preprocessor": "--skip_padding is for the task exports (classifier, squad, ner, swag, embedder), not "
                             "--export_type=preprocessor",
        "bf16_int8": "--mixed_precision=bf16 is for float weights, not quantize=int8",
        "bf16_encoder": "--mixed_precision=bf16 is for the task exports (classifier, squad, ner, swag, embedder), "
                        "not export_type=encoder",
        "overwrite_run": f"--export_dir: export directory {str(exported.sources.runs['swag'])!r} holds "
                         "bert_config.json, checkpoint, ckpt-",
        "bucket_fixed": "--length_bucket=4 has no use with --pad_to_max_seq_length (every request is padded to "
                        "--seq_length): give one of them",
        "bucket_above": "--length_bucket=1000 is above the export's sequence length 16 (--seq_length, default the "
                        "run's max_seq_length): no request is longer; give at most that",
        "search_folder": f"--init_checkpoint={exported.root}/search holds a search (search.json): use "
                         f"--init_checkpoint={exported.root}/search/best, its chosen run",
        "other_vocab": f"--vocab_file={exported.root}/swapped_vocab.txt is not the vocabulary of "
                       f"{exported.sources.runs['classifier']}/vocab.txt: line 6 is",
    }
    for case, words in expected.items():
        assert outcomes[case].startswith("export_saved_model.py: error:") and words in outcomes[case], (
            case,
            outcomes[case],
        )
    for bad in (f"bad{i}" for i in range(1, 19)):
        assert not (exported.out / bad).exists(), bad
    assert "not an earlier export (no saved_model.pb): --overwrite replaces only an export" in outcomes["overwrite_run"]
    assert (exported.sources.runs["swag"] / "fine_tuning_task.json").is_file()  # the run is as it was
    # --overwrite replaced the older export whole; no temporary folder is left behind.
    occupied = exported.out / "occupied"
    assert not (occupied / "marker").exists() and (occupied / "saved_model.pb").is_file()
    assert sorted(p.name for p in exported.out.iterdir() if p.name.startswith(".")) == []
    # Directories and files get the user's umask (mkdtemp's 0700 is not kept).
    mask = os.umask(0)
    os.umask(mask)
    assert (exported.out / "encoder").stat().st_mode & 0o777 == 0o777 & ~mask


def test_a_diverged_runs_export_names_its_diverged_file_in_a_warning(exported, tmp_path):
    """A search's run that diverged keeps its checkpoints from before: exported, a warning names
    its diverged.json (the case stops at a later check, so that no export is written for it)."""
    import shutil

    run = tmp_path / "diverged_run"
    shutil.copytree(exported.sources.runs["classifier"], run)
    (run / "diverged.json").write_text(json.dumps({"step": 6, "message": "the loss became nan at step 6"}))
    result = run_script("export_saved_model.py", "--export_type=classifier", f"--init_checkpoint={run}",
                        f"--export_dir={tmp_path / 'export'}", "--max_query_length=8")
    assert result.returncode == 1
    assert (f"--init_checkpoint: {run / 'diverged.json'}: this run diverged at step 6 and did not finish; its last "
            "checkpoint is from before that, not a trained model") in result.stderr
    assert result.stderr.strip().splitlines()[-1] == ("export_saved_model.py: error: --max_query_length is for "
                                                      "--export_type=squad, not classifier")


def test_exports_load_without_this_package_and_carry_their_files(exported, loaded):
    assert loaded.results["modules"] == []
    for name in ("encoder", "preprocessor", "classifier", "squad", "ner", "swag", "embedder"):
        # Plain TensorFlow objects: no Keras class is revived.
        assert all(
            not m.startswith(("keras", "tf_keras", "bert_tf")) for m in loaded.results[f"{name}/object_types"]
        ), name
        assets = loaded.results[f"{name}/assets"]
        assert assets["vocab_file"] == "\n".join(VOCAB) + "\n", name
        if name != "preprocessor":
            assert json.loads(assets["bert_config_file"]) == tiny_config().to_dict(), name
    for kind, record in RECORDS.items():
        assert json.loads(loaded.results[f"{kind}/assets"]["task_file"]) == record
        # The serving options, recorded: without XLA the default pads a request to its exact longest
        # and skips the padding of a batch.
        assert json.loads(loaded.results[f"{kind}/assets"]["serving_file"]) == {
            "seq_length": record["max_seq_length"], "length_bucket": 1, "jit_compile": False, "quantize": None,
            "skip_padding": True, "mixed_precision": None}
    assert json.loads(loaded.results["classifier_int8/assets"]["serving_file"]) == {
        "seq_length": 16, "length_bucket": 4, "jit_compile": True, "quantize": "int8", "skip_padding": False,
        "mixed_precision": None}
    assert json.loads(loaded.results["preprocessor/assets"]["serving_file"]) == {"seq_length": 16, "length_bucket": 1}


def test_a_float_export_takes_this_machines_measured_xla_choice_and_says_where_from(exported, loaded):
    assets = {k: json.loads(loaded.results[f"{k}/assets"]["serving_file"])
              for k in ("classifier_measured", "squad_fixed", "classifier_bf16")}
    float32 = {"quantize": None, "mixed_precision": None}
    # XLA-compiled, the default bucket is 8: one program per shape.
    assert assets["classifier_measured"] == {"seq_length": 16, "length_bucket": 8, "jit_compile": True,
                                             "skip_padding": False, **float32}
    assert assets["squad_fixed"] == {"seq_length": 20, "length_bucket": None, "jit_compile": False,
                                     "skip_padding": False, **float32}
    assert assets["classifier_bf16"] == {"seq_length": 16, "length_bucket": 1, "jit_compile": False, "quantize": None,
                                         "skip_padding": True, "mixed_precision": "bf16"}
    # Compiled, the float model gives the same probabilities; bfloat16 close ones (its rounding).
    for kind, size in itertools.product(("classifier_measured", "classifier_bf16"), ("b1", "b64")):
        got = np.asarray(loaded.results[f"{kind}/{size}"]["probabilities"])
        want = np.asarray(loaded.results[f"classifier/{size}"]["probabilities"])
        if kind == "classifier_bf16":
            assert 0 < np.abs(got - want).max() < 0.04, (size, np.abs(got - want).max())  # 0.022 measured
        else:
            np.testing.assert_allclose(got, want, atol=1e-5)
    # One line each for the three task exports logged (squad_fixed, this one, bf16's), none for
    # the preprocessor.
    lines = [line for line in exported.log.read_text().splitlines() if "jit_compile" in line]
    assert lines == ["serving_jit_compile=False: given",
                     f"serving_jit_compile=True: measured on this machine ({exported.speed_file})",
                     "serving_jit_compile=False: --mixed_precision=bf16"], lines


def test_saved_model_cli_lists_each_signature_with_names_dtypes_and_shapes(loaded):
    listings = loaded.listings
    expected = {
        "encoder": ["inputs['input_word_ids']", "DT_INT32", "shape: (-1, -1)", "outputs['pooled_output']",
                    "shape: (-1, 32)", "outputs['encoder_outputs_1']", "outputs['default']"],
        # Text-in outputs along the sequence are as long as the request's bucketed longest: -1.
        "preprocessor": ["inputs['text']", "DT_STRING", "outputs['input_mask']", "shape: (-1, -1)"],
        "classifier": ["inputs['text_a']", "inputs['text_b']", "outputs['probabilities']", "shape: (-1, 3)",
                       "outputs['label']", "outputs['label_id']"],
        "squad": ["inputs['question']", "inputs['context']", "outputs['start_logits']", "shape: (-1, -1)",
                  "outputs['tokens']"],
        "ner": ["inputs['text']", "outputs['label']", "outputs['probabilities']", "shape: (-1, -1, 3)",
                "outputs['num_words']"],
        "swag": ["inputs['choices']", "shape: (-1, 4)", "outputs['probabilities']", "outputs['label']"],
        "embedder": ["inputs['text_a']", "DT_STRING", "outputs['embeddings']", "DT_FLOAT", "shape: (-1, 32)"],
    }
    for name in ("encoder", "classifier"):  # --all: every signature, then the callable functions
        assert "signature_def['serving_default']" in listings[name] and "Concrete Functions:" in listings[name]
    assert "Function Name: '__call__'" in listings["encoder"]
    for name, pieces in expected.items():
        for piece in pieces:
            assert piece in listings[name], (name, piece)


def test_preprocessor_gives_fulltokenizers_ids_and_the_originals_packing(loaded):
    texts = loaded.requests["preprocessor"]["b64"]["text"]
    tok = loaded.tokenizer
    expected = _packed(tok, texts, None, 16)
    for key in ("b1", "b64", "call"):
        got = loaded.results[f"preprocessor/{key}"]
        n = 1 if key == "b1" else 64
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value[:n], err_msg=f"{key} {name}")
    # tokenize: words, then their pieces, FullTokenizer's ids.
    tokenized = loaded.results["preprocessor/tokenize"]
    assert tokenized["ragged_rank"] == 2
    for text, words in zip(texts, tokenized["pieces"], strict=True):
        basic = tok.basic_tokenizer.tokenize(text)
        assert words == [tok.convert_tokens_to_ids(tok.wordpiece_tokenizer.tokenize(w)) for w in basic], text
    pair = _packed(tok, texts[:32], texts[32:], 12)
    for name, value in pair.items():
        np.testing.assert_array_equal(loaded.results["preprocessor/pair_12"][name], value, err_msg=name)
    single = _packed(tok, texts[:32], None, 16)
    for name, value in single.items():
        np.testing.assert_array_equal(loaded.results["preprocessor/flat_single"][name], value, err_msg=name)
    assert loaded.results["preprocessor/special"] == {
        "vocab_size": 25, "start_of_sequence_id": 2, "end_of_segment_id": 3, "padding_id": 0, "mask_id": 4}


def test_encoder_matches_keras_and_has_the_tf_hub_interface(exported, loaded):
    encoder = exported.sources.encoder
    for key in ("b1", "b64"):
        inputs = {k: np.array(v, np.int32) for k, v in loaded.requests["encoder"][key].items()}
        want = encoder(inputs, training=False)
        got = loaded.results[f"encoder/{key}"]
        for name in ("pooled_output", "sequence_output"):
            np.testing.assert_allclose(got[name], want[name], atol=1e-5, err_msg=f"{key} {name}")
        np.testing.assert_allclose(got["default"], want["pooled_output"], atol=1e-5)
        for i, layer in enumerate(want["encoder_outputs"]):
            np.testing.assert_allclose(got[f"encoder_outputs_{i}"], layer, atol=1e-5, err_msg=f"{key} layer {i}")
    assert set(loaded.results["encoder/b64"]["dtypes"].values()) == {"float32"}
    called = loaded.results["encoder/call"]
    np.testing.assert_allclose(called["sequence_output"], loaded.results["encoder/b64"]["sequence_output"], atol=1e-6)
    assert len(loaded.results["encoder/call_layers"]) == 2
    # training=True applies dropout; all weights are there to fine-tune, the seed states too.
    assert np.abs(np.array(loaded.results["encoder/dropout"]) - np.array(called["pooled_output"])).max() > 1e-3
    assert loaded.results["encoder/counts"] == [len(encoder.variables), len(encoder.trainable_variables), True]


def test_an_encoder_exports_from_a_fine_tuning_runs_folder(exported, loaded):
    exported_encoder = tf.saved_model.load(str(exported.out / "encoder_from_run"))
    inputs = {k: np.array(v, np.int32) for k, v in loaded.requests["encoder"]["b64"].items()}
    want = exported.sources.models["classifier"].encoder(inputs, training=False)["sequence_output"]
    np.testing.assert_allclose(exported_encoder(inputs)["sequence_output"], want, atol=1e-5)
    with open(exported_encoder.vocab_file.asset_path.numpy().decode(), encoding="utf-8") as f:
        assert f.read().split() == VOCAB


def test_classifier_matches_keras_on_the_same_text(exported, loaded):
    model = exported.sources.models["classifier"]
    for key in ("b1", "b64"):
        request = loaded.requests["classifier"][key]
        logits = np.asarray(model(_packed(loaded.tokenizer, request["text_a"], request["text_b"], 16), training=False))
        got = loaded.results[f"classifier/{key}"]
        np.testing.assert_allclose(got["probabilities"], tf.nn.softmax(logits), atol=1e-5, err_msg=key)
        assert got["label_id"] == np.argmax(got["probabilities"], axis=-1).tolist()
        assert got["label"] == [LABELS[i] for i in got["label_id"]]
    assert len(set(loaded.results["classifier/b64"]["label"])) > 1  # the weights decide something
    # int8 Dense kernels (inputs quantized per row) through XLA: close to the float model, not equal.
    want = np.asarray(loaded.results["classifier/b64"]["probabilities"])
    difference = np.abs(np.asarray(loaded.results["classifier_int8/b64"]["probabilities"]) - want).max()
    assert 0 < difference < 0.05, difference


def test_span_labeler_matches_keras_and_returns_the_tokens_its_logits_index(exported, loaded):
    model, tok, record = exported.sources.models["squad"], loaded.tokenizer, RECORDS["squad"]
    seq = record["max_seq_length"]
    widths = {}
    for export, key in [(export, key) for export in ("squad", "squad_fixed") for key in ("b1", "b64", "short")]:
        request = loaded.requests["squad"][key]
        rows = []
        for question, context in zip(request["question"], request["context"], strict=True):
            q = tok.tokenize(question)[: record["max_query_length"]]
            c = tok.tokenize(context)[: seq - 3 - len(q)]  # run_squad's first window
            tokens = ["[CLS]", *q, "[SEP]", *c, "[SEP]"]
            rows.append((tokens, [0] * (len(q) + 2) + [1] * (len(c) + 1)))
        inputs = {
            "input_word_ids": np.array(
                [tok.convert_tokens_to_ids(t) + [0] * (seq - len(t)) for t, _ in rows], np.int32
            ),
            "input_mask": np.array([[1] * len(t) + [0] * (seq - len(t)) for t, _ in rows], np.int32),
            "input_type_ids": np.array([ty + [0] * (seq - len(ty)) for _, ty in rows], np.int32),
        }
        want = model(inputs, training=False)
        got = loaded.results[f"{export}/{key}"]
        # The default bucket without XLA is 1: the request's exact longest, at most seq; fixed: seq.
        width = seq if export == "squad_fixed" else min(max(len(t) for t, _ in rows), seq)
        widths[export, key] = width
        # On the tokens; past a text's end the default export (batches skip the padding) gives the
        # model's logits on zero vectors, which no answer reads.
        real = inputs["input_mask"][:, :width].astype(bool)
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(np.asarray(got[name])[real], np.asarray(want[name])[:, :width][real], atol=1e-5,
                                       err_msg=f"{export} {key} {name}")
            if export == "squad_fixed":  # the original's fixed shapes: everywhere
                np.testing.assert_allclose(got[name], want[name], atol=1e-5, err_msg=f"{export} {key} {name}")
        assert got["tokens"] == [(t + [""] * (seq - len(t)))[:width] for t, _ in rows]
        np.testing.assert_array_equal(got["input_type_ids"], inputs["input_type_ids"][:, :width])
    assert widths["squad", "short"] < seq and widths["squad_fixed", "short"] == seq


def test_token_classifier_tags_every_word_as_run_ner_reads_sentences(exported, loaded):
    model, record = exported.sources.models["ner"], RECORDS["ner"]
    tokenizer = BertTokenizer(str(exported.sources.google / "vocab.txt"), do_lower_case=True)
    for key in ("b1", "b64"):
        texts = loaded.requests["ner"][key]["text"]
        sentences = [Sentence(t.split()) for t in texts]
        features = encode_sentences(
            sentences, TAGS, tokenizer, record["max_seq_length"], record["window_context_words"]
        )
        inputs = {k: features[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
        probabilities = tf.nn.softmax(model(inputs, training=False)).numpy()
        want = tags_of(probabilities, features["label_weights"], [len(s.words) for s in sentences])
        got = loaded.results[f"ner/{key}"]
        assert got["num_words"] == [len(s.words) for s in sentences]
        for i, sentence in enumerate(sentences):
            n = len(sentence.words)
            assert got["words"][i] == sentence.words + [""] * (len(got["words"][i]) - n)
            probabilities = np.reshape(got["probabilities"][i][:n], (n, len(TAGS)))
            np.testing.assert_allclose(probabilities, np.reshape(want[i], (n, len(TAGS))), atol=1e-5)
            assert got["label_id"][i][:n] == np.argmax(probabilities, axis=-1).tolist()
            assert got["label"][i][:n] == [TAGS[j] for j in got["label_id"][i][:n]]
            assert set(got["label_id"][i][n:]) <= {-1} and set(got["label"][i][n:]) <= {""}
    empty = loaded.results["ner/empty"]
    assert empty["num_words"] == [0, 0] and empty["shapes"]["probabilities"] == [2, 0, len(TAGS)]
    # Sentences longer than max_seq_length - 2 pieces went through several windows.
    assert max(len(t.split()) for t in loaded.requests["ner"]["b64"]["text"]) > 2 * (record["max_seq_length"] - 2)


def test_multiple_choice_matches_keras_on_the_same_text(exported, loaded):
    model, tok = exported.sources.models["swag"], loaded.tokenizer
    for key in ("b1", "b64"):
        request = loaded.requests["swag"][key]
        pairs = zip(request["context"], request["choices"], strict=True)
        flat = [(c, choice) for c, choices in pairs for choice in choices]
        packed = _packed(tok, [c for c, _ in flat], [x for _, x in flat], 12)
        inputs = {k: v.reshape(-1, 4, 12) for k, v in packed.items()}
        probabilities = tf.nn.softmax(model(inputs, training=False)).numpy()
        got = loaded.results[f"swag/{key}"]
        np.testing.assert_allclose(got["probabilities"], probabilities, atol=1e-5, err_msg=key)
        assert got["label"] == [choices[i] for choices, i in zip(request["choices"], got["label_id"], strict=True)]


def test_the_embedder_export_pools_the_encoders_real_tokens_and_normalizes_as_numpy_restates(exported, loaded):
    model, tok = exported.sources.models["embedder"], loaded.tokenizer
    for key in ("b1", "b64"):
        texts = loaded.requests["embedder"][key]["text_a"]
        packed = _packed(tok, texts, None, 16)
        tokens = np.asarray(model.encoder(packed, training=False)["sequence_output"])  # [B, 16, H]
        mask = packed["input_mask"][:, :, None].astype(np.float32)
        mean = (tokens * mask).sum(1) / mask.sum(1)
        want = mean / np.linalg.norm(mean, axis=1, keepdims=True)
        got = np.asarray(loaded.results[f"embedder/{key}"]["embeddings"])
        assert loaded.results[f"embedder/{key}"]["dtypes"] == {"embeddings": "float32"}
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=key)


def test_a_mixed_precision_keras_file_exports_with_float32_outputs(exported, loaded):
    got = loaded.results["encoder_bf16/b64"]
    assert set(got["dtypes"].values()) == {"float32"}, got["dtypes"]
    inputs = {k: np.array(v, np.int32) for k, v in loaded.requests["encoder_bf16"]["b64"].items()}
    want = exported.sources.bf16(inputs, training=False)
    assert want["pooled_output"].dtype == "bfloat16"  # computed in bfloat16, served as float32
    # bfloat16 keeps 8 bits of mantissa, and the served graph rounds in other places than eager
    # calls (grappler fuses a product with its bias): both are as far from the float32 model.
    float32 = exported.sources.encoder(inputs, training=False)
    for name in ("pooled_output", "sequence_output"):
        eager = np.asarray(want[name], np.float32)
        reference = np.asarray(float32[name])
        served_error, eager_error = (np.abs(np.asarray(v) - reference).max() for v in (got[name], eager))
        assert served_error <= 1.5 * eager_error, (name, served_error, eager_error)
        np.testing.assert_allclose(got[name], eager, atol=0.1, err_msg=name)
    # The .keras file carries its config: the export's bert_config.json is the model's.
    assert json.loads(loaded.results["encoder_bf16/assets"]["bert_config_file"]) == tiny_config().to_dict()


# -------------------------------------------------------------------------------------------------
# TF Hub: the exports through tensorflow_hub.KerasLayer under tf-keras, as TF Hub-based fine-tuning
# code uses them. Neither package is a dependency: they are installed for this test only.


_HUB_SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_hub as hub
import tensorflow_text  # noqa: F401 - the tokenizer's ops

assert tf.keras.__name__.startswith("tf_keras"), tf.keras.__name__
encoder_dir, preprocessor_dir = sys.argv[1], sys.argv[2]
words = ["the", "cat", "dog", "sat", "on", "mat", "red"]
texts = [" ".join(np.random.default_rng(i).choice(words, 6)) for i in range(32)]
labels = np.array([int("cat" in t.split()) for t in texts])
tf.keras.utils.set_random_seed(0)

# One segment: the preprocessor called on strings, the encoder fine-tuned.
preprocessor = hub.KerasLayer(preprocessor_dir)
encoder = hub.KerasLayer(encoder_dir, trainable=True)
text = tf.keras.layers.Input(shape=(), dtype=tf.string)
outputs = encoder(preprocessor(text))
model = tf.keras.Model(text, tf.keras.layers.Dense(2)(outputs["pooled_output"]))
model.compile(tf.keras.optimizers.Adam(1e-3), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
before = [w.numpy() for w in encoder.trainable_weights]
# Judged without dropout (the export's dropout draws from a per-process random seed): the loss on
# the training texts before and after fine-tuning.
loss_before = model.evaluate(tf.constant(texts), labels, batch_size=8, verbose=0)
model.fit(tf.constant(texts), labels, batch_size=8, epochs=6, verbose=0)
losses = [loss_before, model.evaluate(tf.constant(texts), labels, batch_size=8, verbose=0)]
changed = sum(int(np.abs(a - w.numpy()).max() > 0) for a, w in zip(before, encoder.trainable_weights))

# Two segments: tokenize and bert_pack_inputs (seq_length as an argument), as TF Hub's tutorials do.
raw = hub.load(preprocessor_dir)
tokenize = hub.KerasLayer(raw.tokenize)
pack = hub.KerasLayer(raw.bert_pack_inputs, arguments=dict(seq_length=12))
a, b = tf.keras.layers.Input(shape=(), dtype=tf.string), tf.keras.layers.Input(shape=(), dtype=tf.string)
pair_model = tf.keras.Model([a, b], pack([tokenize(a), tokenize(b)]))
pair = pair_model([tf.constant(texts[:4]), tf.constant(texts[4:8])])
direct = tf.saved_model.load(encoder_dir)(dict(pair))["pooled_output"]
layer = hub.KerasLayer(encoder_dir)(dict(pair))["pooled_output"]
print(json.dumps({
    "losses": losses,
    "changed": changed,
    "trainable": [len(encoder.trainable_weights), len(model.trainable_weights)],
    "pair_ids": pair["input_word_ids"].numpy().tolist(),
    "pair_types": pair["input_type_ids"].numpy().tolist(),
    "layer_vs_direct": float(np.abs(direct.numpy() - layer.numpy()).max()),
}))
"""


@pytest.fixture(scope="module")
def tf_hub_run(request, tmp_path_factory, exported):
    """The TF Hub script on the encoder and preprocessor exports, running in the background
    (its output in files: a full pipe would stop it); yields (process, stdout path, stderr path)."""
    packages = installed_peers(request, tmp_path_factory, "tf_hub_peers")  # tensorflow-hub, tf-keras
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(packages), "TF_USE_LEGACY_KERAS": "1"}
    stdout, stderr = exported.root / "hub.out", exported.root / "hub.err"
    with open(stdout, "w") as out, open(stderr, "w") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", _HUB_SCRIPT, str(exported.out / "encoder"), str(exported.out / "preprocessor")],
            stdout=out, stderr=err, env=env, cwd="/",
        )
    yield process, stdout, stderr
    if process.poll() is None:
        process.kill()
        process.wait()


def test_encoder_and_preprocessor_fine_tune_through_tf_hub_keras_layer(exported, tf_hub_run):
    process, stdout, stderr = tf_hub_run
    assert process.wait(timeout=600) == 0, stderr.read_text()[-3000:]
    report = json.loads(stdout.read_text().strip().splitlines()[-1])
    encoder_weights = len(exported.sources.encoder.trainable_variables)
    assert report["trainable"] == [encoder_weights, encoder_weights + 2]  # + the new Dense
    assert report["changed"] == encoder_weights  # every encoder weight was fine-tuned
    assert report["losses"][-1] < report["losses"][0], report["losses"]
    tok = FullTokenizer(str(exported.sources.google / "vocab.txt"), do_lower_case=True)
    texts = [
        " ".join(np.random.default_rng(i).choice(["the", "cat", "dog", "sat", "on", "mat", "red"], 6)) for i in range(8)
    ]
    expected = _packed(tok, texts[:4], texts[4:8], 12)
    assert report["pair_ids"] == expected["input_word_ids"].tolist()
    assert report["pair_types"] == expected["input_type_ids"].tolist()
    assert report["layer_vs_direct"] < 1e-6

