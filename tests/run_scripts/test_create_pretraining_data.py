import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bert_tf import io_utils
from bert_tf.data.pretraining import creation as pd
from bert_tf.data.pretraining import pipeline as pipelines
from bert_tf.tokenization import FullTokenizer
from tests.helpers import dead_owner_tag
from tests.run_scripts.conftest import _DRIVER, REPO, run_script
from tests.run_scripts.script_cases import run_cases
from tests.tiny import write_vocab

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data")
CORPUS, VOCAB = os.path.join(DATA, "corpus.txt"), os.path.join(DATA, "vocab.txt")


def _read_all(paths, seq=128, pred=20):
    ds = pipelines.pretraining_dataset(",".join(paths), 1, seq, pred, is_training=False)
    return [(x, y) for x, y in ds.unbatch().as_numpy_iterator()]


def _contains(stream, part):
    return f" {' '.join(map(str, part))} " in stream


@pytest.mark.slow
def test_original_command_line_writes_valid_original_records(tmp_path):
    outs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    result = run_script(
        "create_pretraining_data.py",
        f"--input_file={CORPUS}",
        f"--output_file={','.join(outs)}",
        f"--vocab_file={VOCAB}",
        "--do_lower_case=True",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--masked_lm_prob=0.15",
        "--random_seed=12345",
        "--dupe_factor=3",
        "--short_seq_prob=0.1",
        "--noprogress",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = re.search(r"Instances: (\d+) .* masked tokens: (\d+)", result.stderr)
    assert summary and "Documents: 30" in result.stderr and "Wrote 2 file(s)" in result.stderr
    records = _read_all(outs, 64, 10)
    assert len(records) == int(summary.group(1)) > 150
    assert sum(int(y["masked_lm_weights"].sum()) for _, y in records) == int(summary.group(2))
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temporary left over

    # Every segment, unmasked, is a contiguous run of a document's word pieces (tokenized here
    # with the Python FullTokenizer, independently of the in-graph tokenizer the script uses).
    tokenizer = FullTokenizer(VOCAB)
    streams, current = [], []
    with open(CORPUS, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                current += tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line))
            elif current:
                streams.append(f" {' '.join(map(str, current))} ")
                current = []
    streams.append(f" {' '.join(map(str, current))} ")
    cls, sep, mask = (tokenizer.vocab[t] for t in ("[CLS]", "[SEP]", "[MASK]"))
    random_next = 0
    for x, y in records:
        n = int(x["input_mask"].sum())
        ids = x["input_word_ids"][:n].copy()
        k = int(y["masked_lm_weights"].sum())
        positions = x["masked_lm_positions"][:k]
        ids[positions] = y["masked_lm_ids"][:k]  # unmask
        seps = np.nonzero(ids == sep)[0].tolist()
        assert ids[0] == cls and len(seps) == 2 and seps[1] == n - 1 and cls not in ids[1:]
        a, b = ids[1 : seps[0]], ids[seps[0] + 1 : n - 1]
        assert len(a) and len(b) and n <= 64
        assert x["input_type_ids"][:n].tolist() == [0] * (seps[0] + 1) + [1] * (n - seps[0] - 1)
        assert not x["input_type_ids"][n:].any() and not x["input_word_ids"][n:].any()
        assert k == min(10, max(1, round(n * 0.15))) and not set(positions.tolist()) & {0, seps[0], n - 1}
        assert any(_contains(s, a) for s in streams) and any(_contains(s, b) for s in streams)
        if y["next_sentence_labels"][0] == 0:  # actual next: A then B, same document
            assert any(
                _contains(s, a) and _contains(s, b) and s.index(" ".join(map(str, a))) < s.index(" ".join(map(str, b)))
                for s in streams
            )
        random_next += int(y["next_sentence_labels"][0])
    assert 0 < random_next < len(records)


def _config(**kw):
    return pd.PretrainingDataConfig(
        vocab_file=VOCAB, dupe_factor=2, max_seq_length=64, max_predictions_per_seq=10, **kw
    )


def test_interrupted_run_resumes_with_identical_output(tmp_path):
    config, shard = _config(), 3000  # about 4 shards
    full = [str(tmp_path / "full" / "x.tfrecord")]
    pd.create_pretraining_data(config, [CORPUS], full, shard_bytes=shard)

    outs = [str(tmp_path / "run" / "x.tfrecord")]

    def stop(stats):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pd.create_pretraining_data(config, [CORPUS], outs, shard_bytes=shard, on_shard_done=stop)
    assert not os.path.exists(outs[0])  # nothing that looks finished
    stats, resumed = pd.create_pretraining_data(config, [CORPUS], outs, shard_bytes=shard)
    assert resumed >= 1 and stats.documents == 30
    with open(full[0], "rb") as a, open(outs[0], "rb") as b:
        assert a.read() == b.read()
    assert os.listdir(tmp_path / "run") == ["x.tfrecord"]  # work folder removed


@pytest.mark.slow
def test_two_workers_write_the_same_files_as_one(tmp_path, monkeypatch):
    config = _config(do_whole_word_mask=True)
    one, two = [str(tmp_path / "1" / "x.tfrecord")], [str(tmp_path / "2" / "x.tfrecord")]
    pd.create_pretraining_data(config, [CORPUS], one, num_workers=1, shard_bytes=3000)
    # The corpus is small: lower the per-worker threshold so that a worker process really runs.
    monkeypatch.setattr(pd, "_BYTES_PER_EXTRA_WORKER", 1)
    pd.create_pretraining_data(config, [CORPUS], two, num_workers=2, shard_bytes=3000)
    with open(one[0], "rb") as a, open(two[0], "rb") as b:
        assert a.read() == b.read()


@pytest.mark.slow
def test_script_workers_started_before_tensorflow_write_the_same_files(tmp_path):
    common = [f"--input_file={CORPUS}", f"--vocab_file={VOCAB}", "--dupe_factor=2", "--max_seq_length=64",
              "--max_predictions_per_seq=10", "--shard_size_mb=0.003", "--noprogress"]
    outs = {}
    for workers in (1, 2):
        out = [str(tmp_path / str(workers) / name) for name in ("a.tfrecord", "b.tfrecord")]
        result = run_script(
            "create_pretraining_data.py", *common, f"--output_file={','.join(out)}", f"--num_workers={workers}"
        )
        assert result.returncode == 0, result.stderr[-3000:]
        outs[workers] = [open(path, "rb").read() for path in out]
    assert outs[1] == outs[2]
    # A bad flag stops the run with the message, and the waiting worker processes with it.
    result = run_script("create_pretraining_data.py", *common, "--input_file=/nonexistent/*.txt",
                        f"--output_file={tmp_path / 'x.tfrecord'}", "--num_workers=3")
    assert result.returncode != 0 and "matches no file" in result.stderr


def test_worker_pool_without_a_job_ends_cleanly():
    from bert_tf.data.pretraining import SHARD_WORKER
    from bert_tf.data.worker_pool import WorkerPool

    pool = WorkerPool(1, SHARD_WORKER)
    pool.close()
    pool.close()  # a second close is a no-op
    assert not pool.processes[0].is_alive() and pool.processes[0].exitcode == 0
    empty = WorkerPool(0, SHARD_WORKER)
    empty.submit("job")
    with pytest.raises(RuntimeError, match="one job"):
        empty.submit("job")


def test_worker_function_writes_the_same_parts(tmp_path):
    """What a worker process runs, run here over every shard; the main run then only assembles."""
    import multiprocessing
    import queue

    config, shard = _config(), 3000
    one = [str(tmp_path / "1" / "x.tfrecord")]
    pd.create_pretraining_data(config, [CORPUS], one, shard_bytes=shard)

    outs = [str(tmp_path / "w" / "x.tfrecord")]
    shards = pd.plan_shards([CORPUS], shard)
    workdir = pd.work_dir(config, [CORPUS], outs, shard)
    os.makedirs(workdir)
    results = queue.Queue()
    pd.work_on_shards(multiprocessing.Value("q", 0), config, shards, 1, workdir, results)
    reports = [results.get_nowait() for _ in range(results.qsize())]
    assert [kind for kind, _ in reports] == ["done"] * len(shards) + ["exit"]
    _, resumed = pd.create_pretraining_data(config, [CORPUS], outs, shard_bytes=shard)
    assert resumed == len(shards) > 1
    with open(one[0], "rb") as a, open(outs[0], "rb") as b:
        assert a.read() == b.read()


def test_shards_end_at_document_boundaries(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a b\nc d\n\ne f\n \u3000\ng h\n\n\ni j\n", encoding="utf-8")
    shards = pd.plan_shards([str(path)], 5)
    data = path.read_bytes()
    assert len(shards) == 3 and not any(s.cut for s in shards)
    assert shards[0].start == 0 and shards[-1].end == len(data)
    for left, right in zip(shards, shards[1:], strict=False):
        assert left.end == right.start
        assert data[: left.end].endswith((b"\n\n", "\u3000\n".encode()))  # after a blank line
    texts = [pd.read_shard_lines(s)[0] for s in shards]
    assert [line for t in texts for line in t] == [line.strip() for line in data.decode().split("\n")[:-1]]


@pytest.mark.slow
def test_bad_input_is_reported(tmp_path):
    corpus = tmp_path / "odd.txt"
    long_line = " ".join(["harbour"] * 80)
    corpus.write_bytes(
        b"The town woke \xff\xfe slowly.\nBoats left.\n\nOne sentence only.\n\n" + long_line.encode() + b"\nGulls.\n"
    )
    result = run_script(
        "create_pretraining_data.py",
        f"--input_file={corpus}",
        f"--output_file={tmp_path / 'o.tfrecord'}",
        f"--vocab_file={VOCAB}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=5",
        "--noprogress",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--max_predictions_per_seq=5 is below max_seq_length * masked_lm_prob = 10" in result.stderr
    assert "Replaced 2 invalid UTF-8 byte(s)" in result.stderr
    assert "1 line(s) have more than 61 word pieces" in result.stderr
    assert "Documents: 3 (1 of one sentence)" in result.stderr

    missing = run_script(
        "create_pretraining_data.py",
        f"--input_file={tmp_path}/nothing*.txt,{corpus}",
        f"--output_file={tmp_path / 'm.tfrecord'}",
        f"--vocab_file={VOCAB}",
    )
    assert missing.returncode != 0 and "nothing*.txt' matches no file" in missing.stderr

    for flag, message in (
        ("--num_workers=0", "--num_workers must be at least 1"),
        ("--shard_size_mb=0", "--shard_size_mb must be positive"),
    ):
        bad = run_script(
            "create_pretraining_data.py",
            f"--input_file={corpus}",
            f"--output_file={tmp_path / 'b.tfrecord'}",
            f"--vocab_file={VOCAB}",
            flag,
        )
        assert bad.returncode != 0 and message in bad.stderr
        assert not (tmp_path / "b.tfrecord").exists()

    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n   \n")
    result = run_script(
        "create_pretraining_data.py",
        f"--input_file={empty}",
        f"--output_file={tmp_path / 'e.tfrecord'}",
        f"--vocab_file={VOCAB}",
    )
    assert result.returncode != 0 and "has no documents" in result.stderr
    assert not (tmp_path / "e.tfrecord").exists()

    no_mask = write_vocab(tmp_path / "v.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"])
    result = run_script(
        "create_pretraining_data.py",
        f"--input_file={corpus}",
        f"--output_file={tmp_path / 'v.tfrecord'}",
        f"--vocab_file={no_mask}",
    )
    assert result.returncode != 0 and re.search(r"v.txt' lacks \[MASK\]", result.stderr)


def test_shards_stay_under_twice_the_shard_size_whatever_the_text(tmp_path):
    """Long documents, one endless line, binary junk: every shard holds at most 2 * shard_bytes
    (the memory bound), cut at a blank line when there is one, else at a line end, else at a space
    or between UTF-8 characters; the shards cover the file exactly."""
    texts = {
        "document": ("word " * 9 + "\n") * 200 + "\nshort\n",  # one 2 kB document
        "line": "é " * 3000 + "\n",
        "chars": "日本語" * 1000,
        "binary": bytes(range(256)) * 20,
        "blank_before": "a\n\n" + "x" * 700 + "\n",  # ends at the blank line, not in the document
    }
    for name, text in texts.items():
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        data = path.read_bytes()
        shards = pd.plan_shards([str(path)], 100)
        assert [(s.start, s.end) for s in shards] == list(
            zip([0] + [s.end for s in shards[:-1]], [s.end for s in shards], strict=True)
        )
        assert shards[-1].end == len(data) and all(0 < s.end - s.start <= 200 for s in shards), name
        for left in shards[:-1]:
            if name == "document":  # cut at line ends, but where the document really ends
                assert (left.cut, data[left.end - 1 : left.end]) == ("document", b"\n") or data[: left.end].endswith(
                    b"\n\n"
                )
            if name == "line":
                assert left.cut == "line" and data[left.end - 1 : left.end] == b" "
            if name == "chars":
                assert left.cut == "line" and data[left.end] & 0xC0 != 0x80  # a character starts the next
    assert [s.cut for s in pd.plan_shards([str(tmp_path / "blank_before")], 100)][:1] == [""]
    # A cut ends the document: the next shard's text is another one.
    line = pd.plan_shards([str(tmp_path / "line")], 100)
    first, end = pd.read_shard_lines(line[0])[0]
    assert set(first.split(" ")) == {"é"} and end == ""
    assert "".join(t for s in line for t in pd.read_shard_lines(s)[0]).replace(" ", "") == "é" * 3000


def test_work_folders_of_stopped_runs_with_other_settings_are_removed(tmp_path):
    """A run reuses its own work folder (resume) and removes the ones that stopped runs with the
    same output but other inputs or settings left (never resumable), unless their run is alive."""
    out = tmp_path / "x.tfrecord"
    stale = {
        "dead": dead_owner_tag(),
        "ownerless": None,  # a run from before owners were recorded
        "alive": io_utils.owner_tag(),
    }
    for name, owner in stale.items():
        folder = tmp_path / f".x.tfrecord.work-{name}"
        folder.mkdir()
        (folder / "part-000000-0000.tfrecord").write_bytes(b"x" * 10)
        if owner:
            (folder / "owner").write_text(owner)
    (tmp_path / ".x.tfrecord.tmp").write_bytes(b"partial")  # a killed run's assembly
    pd.create_pretraining_data(_config(), [CORPUS], [str(out)], shard_bytes=1 << 20)
    assert sorted(os.listdir(tmp_path)) == [".x.tfrecord.work-alive", "x.tfrecord"]


@pytest.mark.slow
def test_bad_paths_fail_before_any_work_memory_follows_the_shard_size_and_a_full_disk_leaves_nothing(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(open(CORPUS, "rb").read())
    # One 8.4 MB line of accented, Greek, Cyrillic and CJK words (the code-point road of the
    # tokenizer), no blank line anywhere.
    rng = np.random.default_rng(0)
    words = np.array(["élève", "café", "forêt", "garçon", "noël", "Ελλάδα", "москва", "日本語"])
    (tmp_path / "long.txt").write_text(
        "Première.\n" + " ".join(rng.choice(words, 1_000_000)) + "\nFin.\n", encoding="utf-8"
    )
    common = [
        f"--vocab_file={VOCAB}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--dupe_factor=1",
        "--noprogress",
    ]
    out = tmp_path / "o.tfrecord"
    cases = [
        [f"--input_file={corpus}", f"--output_file={out},{tmp_path}/./o.tfrecord", *common],
        [f"--input_file={corpus}", f"--output_file={out},{corpus}", *common],
        [f"--input_file={corpus}", f"--output_file={VOCAB}", *common],
        [f"--input_file={corpus}", f"--output_file={tmp_path / 'folder'}", *common],
        [f"--input_file={corpus}", f"--output_file={tmp_path / 'file' / 'o.tfrecord'}", *common],
        [f"--input_file={tmp_path / 'folder'}", f"--output_file={out}", *common],
        [f"--input_file={corpus}", f"--output_file={out}", *common, f"--vocab_file={tmp_path / 'folder'}"],
        [f"--input_file={corpus}", f"--output_file={out}", *common],  # the baseline: 11 kB of prose
        [f"--input_file={tmp_path / 'long.txt'}", f"--output_file={out}", *common, "--shard_size_mb=0.25"],
        [f"--input_file={corpus}", f"--output_file={tmp_path / 'full.tfrecord'}", *common, "--dupe_factor=3"],
    ]
    outcomes, peaks, _ = run_cases("create_pretraining_data", cases)
    error = "create_pretraining_data.py: error: "
    assert outcomes[:7] == [
        f"{error}--output_file names the same file twice: {out} and {tmp_path}/./o.tfrecord",
        f"{error}--output_file={corpus} is the input file --input_file={corpus}: it would be overwritten",
        f"{error}--output_file={VOCAB} is the input file --vocab_file={VOCAB}: it would be overwritten",
        f"{error}--output_file={tmp_path / 'folder'} is a directory; name a file to write",
        f"{error}--output_file={tmp_path / 'file' / 'o.tfrecord'} is under {tmp_path / 'file'}, which is "
        "a file, not a folder",
        f"{error}--input_file: {tmp_path / 'folder'} is a directory, not a file",
        f"{error}--vocab_file={tmp_path / 'folder'} is a directory, not a file",
    ]
    assert outcomes[7:9] == ["ok", "ok"]
    assert re.fullmatch(
        f"{error}writing --output_file={tmp_path / 'full.tfrecord'} failed \\(rerun the command to "
        "resume\\): .*File too large",
        outcomes[9],
    )
    # The long line is cut into shards of at most 0.5 MB: the peak grows by what such a shard
    # takes (measured: +86 MB), not with the line (as one shard: +480 MB).
    assert (peaks[8] - peaks[7]) / 1024 < 150, peaks
    assert not os.path.exists(tmp_path / "full.tfrecord")
    assert sorted(f for f in os.listdir(tmp_path) if not f.startswith(".full.tfrecord.work-")) == [
        "corpus.txt", "file", "folder", "long.txt", "o.tfrecord"
    ]  # nothing partial beside the work folder, which a rerun resumes from


@pytest.mark.slow
def test_the_papers_ablations_are_flags_and_bad_shares_fail_before_any_work(tmp_path):
    common = [f"--input_file={CORPUS}", f"--vocab_file={VOCAB}", "--max_seq_length=64", "--max_predictions_per_seq=10"]
    bad = str(tmp_path / "bad.tfrecord")
    out = str(tmp_path / "o.tfrecord")
    cases = [
        [*common, f"--output_file={bad}", "--mask_token_prob=-0.1"],
        [*common, f"--output_file={bad}", "--mask_token_prob=0.9", "--random_token_prob=0.2"],
        # An excess that six digits would round away: the sum is printed with enough to show it.
        [*common, f"--output_file={bad}", "--mask_token_prob=0.7", "--random_token_prob=0.3000001"],
        # Every chosen token kept (no [MASK], no random id: the inputs are the labels), and
        # single segments, for "No NSP".
        [*common, f"--output_file={out}", "--mask_token_prob=0", "--random_token_prob=0", "--next_sentence=false",
         "--dupe_factor=1", "--noprogress"],
    ]
    outcomes, _, _ = run_cases("create_pretraining_data", cases)
    error = "create_pretraining_data.py: error: "
    assert outcomes == [
        f"{error}--mask_token_prob=-0.1 must be in [0, 1]",
        f"{error}--mask_token_prob=0.9 + --random_token_prob=0.2 = 1.1 is above 1",
        f"{error}--mask_token_prob=0.7 + --random_token_prob=0.3000001 = 1.0000001 is above 1",
        "ok",
    ]
    assert sorted(os.listdir(tmp_path)) == ["o.tfrecord"]
    tokenizer = FullTokenizer(VOCAB)
    cls, sep, mask = (tokenizer.vocab[t] for t in ("[CLS]", "[SEP]", "[MASK]"))
    records = _read_all([out], 64, 10)
    assert len(records) > 20
    for x, y in records:
        n = int(x["input_mask"].sum())
        ids = x["input_word_ids"][:n]
        k = int(y["masked_lm_weights"].sum())
        assert k == min(10, max(1, round(n * 0.15)))
        assert (ids[x["masked_lm_positions"][:k]] == y["masked_lm_ids"][:k]).all() and mask not in ids
        assert ids[0] == cls and ids[-1] == sep and sep not in ids[:-1]
        assert not x["input_type_ids"].any() and y["next_sentence_labels"][0] == 0


# Runs the script as a user does, then says whether Apache Beam was imported.
_REPORT_BEAM_IMPORT = """
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
print("APACHE_BEAM_IMPORTED", "apache_beam" in sys.modules)
sys.exit(code)
"""


@pytest.mark.slow
def test_the_beam_runner_writes_the_local_runners_bytes_and_the_local_runner_imports_no_beam(tmp_path):
    pytest.importorskip("apache_beam")
    script = os.path.join(REPO, "run_scripts", "create_pretraining_data.py")
    common = [f"--input_file={CORPUS}", f"--vocab_file={VOCAB}", "--dupe_factor=2", "--max_seq_length=64",
              "--max_predictions_per_seq=10", "--shard_size_mb=0.003", "--noprogress"]
    outs = {runner: [str(tmp_path / runner / name) for name in ("a.tfrecord", "b.tfrecord")]
            for runner in ("local", "beam")}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    commands = {
        "local": [sys.executable, "-c", _REPORT_BEAM_IMPORT, script, *common,
                  f"--output_file={','.join(outs['local'])}"],
        "beam": [sys.executable, script, *common, f"--output_file={','.join(outs['beam'])}", "--runner=beam",
                 "--beam_pipeline_options=--runner=DirectRunner --direct_num_workers=2 "
                 "--direct_running_mode=multi_processing"],
    }
    # Both at once: the Beam run spends most of its time starting its worker processes.
    running = {runner: subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True) for runner, command in commands.items()}
    results = {runner: process.communicate(timeout=300) for runner, process in running.items()}
    for runner, (_, stderr) in results.items():
        assert running[runner].returncode == 0, stderr[-3000:]
    assert "APACHE_BEAM_IMPORTED False" in results["local"][0]
    assert re.search(r"Instances: (\d+)", results["local"][1]).group(1) == re.search(
        r"Instances: (\d+)", results["beam"][1]).group(1)
    for local, beam in zip(outs["local"], outs["beam"], strict=True):
        with open(local, "rb") as a, open(beam, "rb") as b:
            assert a.read() == b.read()
    assert sorted(os.listdir(tmp_path / "beam")) == ["a.tfrecord", "b.tfrecord"]


@pytest.mark.slow
def test_runner_flags_that_do_not_fit_and_a_missing_beam_fail_in_one_line_before_any_work(tmp_path):
    # An apache_beam that cannot be imported, first on the path: Beam as if not installed.
    (tmp_path / "stub" / "apache_beam").mkdir(parents=True)
    (tmp_path / "stub" / "apache_beam" / "__init__.py").write_text("raise ImportError('No module named apache_beam')\n")
    out = tmp_path / "o.tfrecord"
    common = [f"--input_file={CORPUS}", f"--vocab_file={VOCAB}", f"--output_file={out}"]
    cases = [
        [*common, "--beam_pipeline_options=--runner=DirectRunner"],
        [*common, "--runner=beam", "--num_workers=2"],
        [*common, "--runner=beam", "--beam_pipeline_options=--runner='DirectRunner"],
        [*common, "--runner=beam"],
    ]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(tmp_path / "stub")}
    argv = ["create_pretraining_data", json.dumps(cases), "0", ""]
    result = subprocess.run([sys.executable, "-c", _DRIVER, REPO, *argv], capture_output=True, text=True, env=env,
                            cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = json.loads([x for x in result.stdout.splitlines() if x.startswith("OUTCOMES ")][-1][9:])
    error = "create_pretraining_data.py: error: "
    assert outcomes == [
        f"{error}--beam_pipeline_options is only read with --runner=beam",
        f"{error}--num_workers has no meaning with --runner=beam: the Beam runner's options set the workers "
        '(e.g. --beam_pipeline_options="--direct_num_workers=2" on the DirectRunner)',
        f"{error}--beam_pipeline_options=\"--runner='DirectRunner\" cannot be split into options: No closing "
        "quotation",
        f"{error}--runner=beam needs Apache Beam, which is not installed (No module named apache_beam): "
        'pip install -e ".[beam]"',
    ]
    assert os.listdir(tmp_path) == ["stub"]


@pytest.mark.slow
def test_beam_options_beam_would_drop_fail_before_anything_is_made_and_both_runners_write_through_links(tmp_path):
    pytest.importorskip("apache_beam")
    common = [f"--vocab_file={VOCAB}", "--dupe_factor=1", "--max_seq_length=64", "--max_predictions_per_seq=10",
              "--noprogress"]
    in_process = "--runner=DirectRunner --direct_num_workers=1 --direct_running_mode=in_memory"
    never = tmp_path / "never" / "o.tfrecord"

    def beam(options, output=never, input_file=CORPUS):
        return [f"--input_file={input_file}", f"--output_file={output}", *common, "--runner=beam",
                f"--beam_pipeline_options={options}"]

    # Outputs given as symbolic links, to a file that exists and to one (in a folder) that does not yet.
    disk, work = tmp_path / "disk", tmp_path / "work"
    disk.mkdir()
    work.mkdir()
    links = {name: work / f"{name}.tfrecord" for name in ("a", "b", "c", "d")}
    targets = {"a": disk / "a.tfrecord", "b": disk / "new" / "b.tfrecord", "c": disk / "c.tfrecord",
               "d": disk / "new2" / "d.tfrecord"}
    for name, link in links.items():
        link.symlink_to(targets[name])
    targets["a"].write_text("old")
    targets["c"].write_text("old")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    cases = [
        beam("--direct_num_wokers=2 --direct_running_mode=in_memory"),
        beam("--runner=DirectRunner hello world"),
        beam("--runner=NoSuchRunner"),
        beam("--runner=DataflowRunner --project=p --region=r"),
        [f"--input_file={CORPUS}", f"--output_file={links['a']},{links['b']}", *common],
        beam(in_process, output=f"{links['c']},{links['d']}"),
        [f"--input_file={empty}", f"--output_file={tmp_path / 'made' / 'local' / 'o.tfrecord'}", *common],
        beam(in_process, output=tmp_path / "made" / "beam" / "o.tfrecord", input_file=empty),
    ]
    outcomes, _, _ = run_cases("create_pretraining_data", cases)
    error = "create_pretraining_data.py: error: --beam_pipeline_options="
    no_instance = "create_pretraining_data.py: error: no instance was made: --input_file has no documents with any "
    no_instance += f"tokens: {empty}"
    assert outcomes[:4] == [
        f"{error}'--direct_num_wokers=2 --direct_running_mode=in_memory': Beam has no option --direct_num_wokers=2 "
        "(did you mean --direct_num_workers?): Beam would drop it with only a log line",
        f"{error}'--runner=DirectRunner hello world': 'hello', 'world' are not options (Beam reads --name=value or "
        "--name value): Beam would drop them with only a log line",
        outcomes[2],  # Beam's own list of its runners follows
        f"{error}'--runner=DataflowRunner --project=p --region=r': runner DataflowRunner cannot write "
        f"--output_file={never}: Dataflow's workers share no file system with this machine, and the work folder and "
        "outputs are written with file-system calls (a gs:// output too); use a runner whose workers all mount the "
        "output's file system (docs/scale.md)",
    ]
    assert outcomes[2].startswith(f"{error}'--runner=NoSuchRunner': Unexpected pipeline runner: NoSuchRunner. "
                                  "Valid values are DataflowRunner, ")
    assert outcomes[4:] == ["ok", "ok", no_instance, no_instance]
    assert not (tmp_path / "never").exists() and not (tmp_path / "made").exists()
    # The links stay links; the files they point to hold the records, the same on both runners.
    for name, link in links.items():
        assert os.readlink(link) == str(targets[name])
    assert sorted(os.listdir(work)) == ["a.tfrecord", "b.tfrecord", "c.tfrecord", "d.tfrecord"]
    assert sorted(os.listdir(disk)) == ["a.tfrecord", "c.tfrecord", "new", "new2"]  # no temporary, no work folder
    assert targets["a"].read_bytes() == targets["c"].read_bytes()
    assert targets["b"].read_bytes() == targets["d"].read_bytes()
    assert len(_read_all([str(targets["a"]), str(targets["b"])], 64, 10)) > 30
