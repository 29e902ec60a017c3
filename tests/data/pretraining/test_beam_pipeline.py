"""The Beam pipeline of create_pretraining_data (in this process, on the DirectRunner): with two
input files (the shards numbered across them as the local plan does), after a failure, a rerun
leaves the finished shards' files as they are (same inode, same mtime), makes the rest, and
writes the same bytes as the local run."""

import os

import pytest

from bert_tf.data.pretraining import creation, work_folder

beam_pipeline = pytest.importorskip("bert_tf.data.pretraining.beam_pipeline")

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data")
CORPUS, VOCAB = os.path.join(DATA, "corpus.txt"), os.path.join(DATA, "vocab.txt")
IN_PROCESS = ["--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"]


def _job(inputs, outputs):
    config = creation.PretrainingDataConfig(vocab_file=VOCAB, dupe_factor=2, max_seq_length=64,
                                            max_predictions_per_seq=10)
    return creation.plan_job(config, inputs, outputs, shard_size_mb=0.003)  # 4 shards of CORPUS, then the other's


def _files(folder):
    """name -> (inode, mtime) of the part files and markers in `folder`."""
    return {e.name: (e.inode(), e.stat().st_mtime_ns) for e in os.scandir(folder)
            if e.is_file() and e.name.endswith((".tfrecord", ".done.json"))}


@pytest.mark.slow
def test_a_rerun_after_a_failure_keeps_the_finished_shards_and_writes_the_local_bytes(tmp_path):
    with open(CORPUS, encoding="utf-8") as f:
        documents = f.read().split("\n\n")
    (tmp_path / "more.txt").write_text("\n\n".join(documents[::-1][:12]), encoding="utf-8")
    inputs = f"{CORPUS},{tmp_path / 'more.txt'}"
    reference = _job(inputs, [str(tmp_path / "local" / "x.tfrecord"), str(tmp_path / "local" / "y.tfrecord")])
    creation.run_job(reference)
    job = _job(inputs, [str(tmp_path / "beam" / "x.tfrecord"), str(tmp_path / "beam" / "y.tfrecord")])
    shards = len(creation.plan_shards(list(job.input_files), job.shard_bytes))
    workdir = work_folder.work_dir(job.config, list(job.input_files), list(job.output_files), job.shard_bytes)
    # A folder where shard 2's first part goes: that shard fails, the run stops there (the local
    # runner takes shards in order, so shards 0 and 1 are finished).
    blocker = work_folder.part_path(workdir, 2, 0)
    os.makedirs(blocker)
    with pytest.raises(OSError):
        creation.run_job(job)
    finished = _files(workdir)
    assert {"shard-000000.done.json", "shard-000001.done.json"} <= set(finished)
    assert "shard-000002.done.json" not in finished

    # The pipeline makes the other shards but fails again: a folder where an output is assembled.
    os.rmdir(blocker)
    assembly_blocker = work_folder.temporary_path(job.output_files[1])
    os.makedirs(assembly_blocker)
    with pytest.raises(beam_pipeline.PipelineError, match="the Beam pipeline failed: .*y.tfrecord.tmp"):
        beam_pipeline.run_job(job, IN_PROCESS)
    now = _files(workdir)
    assert {name: now[name] for name in finished} == finished  # not rewritten
    assert sorted(n for n in now if n.endswith(".done.json")) == [f"shard-{i:06d}.done.json" for i in range(shards)]
    assert not any(os.path.exists(path) for path in job.output_files)

    os.rmdir(assembly_blocker)
    summary = beam_pipeline.run_job(job, IN_PROCESS)
    assert summary.resumed == shards > 4 and summary.stats.documents == 30 + 12
    for ours, theirs in zip(job.output_files, reference.output_files, strict=True):
        with open(ours, "rb") as a, open(theirs, "rb") as b:
            assert a.read() == b.read()
    assert sorted(os.listdir(tmp_path / "beam")) == ["x.tfrecord", "y.tfrecord"]  # work folder removed


def test_an_input_without_documents_or_an_output_url_is_an_error_and_leaves_nothing(tmp_path):
    config = creation.PretrainingDataConfig(vocab_file=VOCAB)
    remote = creation.plan_job(config, CORPUS, ["gs://bucket/x.tfrecord"])
    with pytest.raises(ValueError, match="^--output_file=gs://bucket/x.tfrecord is a URL: .* every worker mounts$"):
        beam_pipeline.run_job(remote, IN_PROCESS)
    assert not os.path.exists("gs:")

    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    job = creation.plan_job(config, str(empty), [str(tmp_path / "out" / "x.tfrecord")])
    with pytest.raises(ValueError, match=f"^no instance was made: --input_file has no documents .*: {empty}$"):
        beam_pipeline.run_job(job, IN_PROCESS)
    assert os.listdir(tmp_path) == ["empty.txt"]  # not even the output's folder


def test_pipeline_args_are_checked_with_beams_own_parser(tmp_path):
    out = [str(tmp_path / "x.tfrecord")]
    beam_pipeline.check_pipeline_args(IN_PROCESS, out)
    # A portable runner's job server defines options of its own (Flink's): those are left to it.
    beam_pipeline.check_pipeline_args(["--runner=FlinkRunner", "--checkpointing_interval", "1000"], out)
    for args, message in [
        (["--runner=FlinkRunner", "--checkpointing_interval", "1000", "stray"], "^'stray' is not an option "),
        (["--direct_num_wokers", "2"], "^Beam has no option --direct_num_wokers 2 "),
        (["--direct_num_workers=two"], "^argument --direct_num_workers: invalid int value: 'two'$"),
        (["--runner=no_such_module.Runner"], "^runner no_such_module.Runner: No module named 'no_such_module'$"),
    ]:
        with pytest.raises(ValueError, match=message):
            beam_pipeline.check_pipeline_args(args, out)
    assert os.listdir(tmp_path) == []
