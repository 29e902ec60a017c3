"""Distillation's losses against numpy statements of Hinton's soft targets and of each task's rule,
the loss a step takes with labelled and transfer rows, the student cut from its teacher's layers,
and the run record that names the teacher."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.models import BertClassifier, BertEncoder
from bert_tf.runs.record import RunRecord
from bert_tf.tasks.classifier.task import ClassifierTask
from bert_tf.tasks.embedder.task import EmbedderTask
from bert_tf.tasks.ner.task import NerTask
from bert_tf.tasks.squad.task import SquadTask
from bert_tf.training.distillation import Distilled, DistilledTask, copy_from_teacher, soft_target_kl
from tests.tiny import tiny_config

RNG = np.random.default_rng(0)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _kl(student, teacher, t):
    """T^2 KL(softmax(teacher/T) || softmax(student/T)) per row, in float64."""
    p, q = _softmax(teacher / t), _softmax(student / t)
    return t * t * (p * (np.log(p) - np.log(q))).sum(-1)


@pytest.mark.parametrize("temperature", [1.0, 2.0, 5.0])
def test_the_soft_target_loss_is_hintons_and_keras_logits_distillations_per_row(temperature):
    student, teacher = RNG.normal(size=(6, 4)) * 3, RNG.normal(size=(6, 4)) * 3
    got = soft_target_kl(tf.constant(student, tf.float32), tf.constant(teacher, tf.float32), temperature).numpy()
    np.testing.assert_allclose(got, _kl(student, teacher, temperature), rtol=1e-4, atol=1e-6)
    # With a KLDivergence object: Keras 3.15's default string "kl_divergence" compares the logits
    # themselves, unsoftened.
    keras_mean = keras.distillation.LogitsDistillation(temperature, keras.losses.KLDivergence()).compute_loss(
        tf.constant(teacher, tf.float32), tf.constant(student, tf.float32))
    np.testing.assert_allclose(got.mean(), float(keras_mean), rtol=1e-4)


def test_each_task_states_its_soft_targets_as_the_rule_says():
    config, t = tiny_config(), 2.0
    s, te = RNG.normal(size=(3, 5)), RNG.normal(size=(3, 5))

    def losses(task, student, teacher, inputs=None, labels=None):
        cast = lambda v: tf.nest.map_structure(lambda a: tf.constant(a, tf.float32), v)  # noqa: E731
        labels = labels or {"weight": tf.ones([3])}
        return task.distillation_losses(inputs, labels, cast(student), cast(teacher), t).numpy()

    single = ClassifierTask(config, ["a", "b", "c", "d", "e"], max_seq_length=16)
    np.testing.assert_allclose(losses(single, s, te), _kl(s, te, t), rtol=1e-4)
    regression = ClassifierTask(config, [], "regression", max_seq_length=16)
    np.testing.assert_allclose(losses(regression, s[:, :1], te[:, :1]), (s[:, 0] - te[:, 0]) ** 2, rtol=1e-5)
    multi = ClassifierTask(config, list("abcde"), "multi", max_seq_length=16)
    p, z = 1 / (1 + np.exp(-te / t)), s / t  # each label a two-way softmax at T
    bce = -(p * np.log(1 / (1 + np.exp(-z))) + (1 - p) * np.log(1 - 1 / (1 + np.exp(-z))))
    np.testing.assert_allclose(losses(multi, s, te), t * t * bce.mean(-1), rtol=1e-4)

    # NER: each real token's tags, the mean over the row's real tokens.
    ner = NerTask(config, ["O", "B-X", "I-X"], max_seq_length=16)
    s3, t3 = RNG.normal(size=(3, 4, 3)), RNG.normal(size=(3, 4, 3))
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    expected = (_kl(s3, t3, t) * mask).sum(-1) / mask.sum(-1)
    np.testing.assert_allclose(losses(ner, s3, t3, {"input_mask": tf.constant(mask)}), expected, rtol=1e-4)

    # SQuAD: the start's and the end's, averaged.
    squad = SquadTask(config, max_seq_length=8)
    start, end = [RNG.normal(size=(3, 8)) for _ in range(2)]
    t_start, t_end = [RNG.normal(size=(3, 8)) for _ in range(2)]
    got = losses(squad, {"start_logits": start, "end_logits": end}, {"start_logits": t_start, "end_logits": t_end})
    np.testing.assert_allclose(got, (_kl(start, t_start, t) + _kl(end, t_end, t)) / 2, rtol=1e-4)

    # Sentence embeddings: each text's squared distance (mean over dimensions); an anchor's row the
    # mean of its anchor's, positive's and negative's.
    embedder = EmbedderTask(config, max_seq_length=16)
    v, tv = RNG.normal(size=(9, 4)), RNG.normal(size=(9, 4))
    per_text = ((v - tv) ** 2).mean(-1)
    np.testing.assert_allclose(losses(embedder, v, tv), per_text.reshape(3, 3).mean(0), rtol=1e-5)


def test_a_steps_loss_weighs_labels_and_soft_targets_and_transfer_rows_count_in_the_second_alone():
    config, alpha, t = tiny_config(), 0.3, 2.0
    inner = ClassifierTask(config, ["a", "b"], max_seq_length=16)
    task = DistilledTask(inner, lambda: None, t, alpha)
    student, teacher = RNG.normal(size=(4, 2)), RNG.normal(size=(4, 2))
    labels = {"label": tf.constant([0, 1, 0, 0]), "weight": tf.constant([1.0, 1.0, 0.0, 0.0])}  # 2 of transfer
    outputs = Distilled(tf.constant(student, tf.float32), tf.constant(teacher, tf.float32), {})
    loss = float(task.loss(task.sums(labels, outputs), task.normalizers(labels)))
    ce = -np.log(_softmax(student)[[0, 1], [0, 1]])
    # Each row's loss, their mean: alpha * its label's loss (labelled rows) + (1 - alpha) * its soft targets'.
    kl = _kl(student, teacher, t)
    np.testing.assert_allclose(loss, (alpha * ce.sum() + (1 - alpha) * kl.sum()) / 4, rtol=1e-4)
    # A row is labelled when any of its weights is (NER weighs tokens).
    tokens = {"weight": tf.constant([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])}
    assert float(task.normalizers(tokens)["labelled_rows"]) == 2

    # A batch of transfer rows only: the labels' term is 0, not NaN.
    transfer = {"label": tf.zeros([4], tf.int32), "weight": tf.zeros([4])}
    loss = float(task.loss(task.sums(transfer, outputs), task.normalizers(transfer)))
    np.testing.assert_allclose(loss, (1 - alpha) * kl.mean(), rtol=1e-4)

    # Evaluation (no teacher ran; Python floats, as the loop adds them): the labels' loss alone.
    sums = {k: float(v) for k, v in task.sums(labels, outputs.student).items()}
    normalizers = {k: float(v) for k, v in task.normalizers(labels).items()}
    np.testing.assert_allclose(task.loss(sums, normalizers), ce.mean(), rtol=1e-4)
    assert set(task.train_logs(sums)) == {"loss", "accuracy", "distill_loss"}

    with pytest.raises(ValueError, match="alpha must be between 0 and 1"):
        DistilledTask(inner, lambda: None, t, 1.5)
    with pytest.raises(ValueError, match="temperature must be positive"):
        DistilledTask(inner, lambda: None, 0.0, 0.5)


def test_a_student_starts_from_its_teachers_embeddings_chosen_layers_pooler_and_head():
    teacher = BertClassifier(BertEncoder.from_bert_config(tiny_config(num_hidden_layers=2)), num_classes=3)
    for v in teacher.weights:  # weights no initializer would give twice
        v.assign(RNG.normal(size=v.shape).astype("float32"))
    student = BertClassifier(BertEncoder.from_bert_config(tiny_config(num_hidden_layers=1)), num_classes=3)
    copy_from_teacher(student, teacher, (1,))
    pairs = [(student.encoder.embeddings, teacher.encoder.embeddings),
             (student.encoder.transformer_layers[0], teacher.encoder.transformer_layers[1]),
             (student.encoder.pooler_dense, teacher.encoder.pooler_dense), (student.classifier, teacher.classifier)]
    for mine, theirs in pairs:
        for a, b in zip(mine.weights, theirs.weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(student.weights) == sum(len(m.weights) for m, _ in pairs)

    wider = BertClassifier(BertEncoder.from_bert_config(tiny_config(num_hidden_layers=1, hidden_size=64)), 3)
    with pytest.raises(ValueError, match="the student's .* is"):
        copy_from_teacher(wider, teacher, (0,))
    with pytest.raises(ValueError, match="the student has 1 layers, not the 2 named"):
        copy_from_teacher(student, teacher, (0, 1))


def test_the_run_record_names_the_teacher_and_reads_back():
    distillation = {"teacher": "/runs/teacher", "distill_temperature": 2.0, "distill_alpha": 0.0,
                    "student_layers": [0, 2], "transfer_file": "/data/unlabelled.tsv"}
    record = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"), distillation=distillation)
    written = record.to_dict()
    assert written["distillation"] == distillation
    assert RunRecord.from_dict(written) == record and RunRecord.from_dict(written).distillation == distillation
    assert "distillation" not in RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1")).to_dict()


def test_transfer_rows_join_the_training_rows_with_no_label_to_learn():
    from bert_tf.data.batching import LABELED
    from bert_tf.tasks.embedder import run as embedder_run
    from bert_tf.tasks.ner import run as ner_run

    # Sentence embeddings: each text in every column, at weight 0.
    pairs = {"anchor": np.array(["a", "b"], object), "positive": np.array(["c", "d"], object),
             "negative": np.array(["e", "f"], object)}
    merged = embedder_run.with_transfer(pairs, ["x", "y", "z"])
    for column in ("anchor", "positive", "negative"):
        assert list(merged[column][2:]) == ["x", "y", "z"]
    assert list(merged[LABELED]) == [1, 1, 0, 0, 0]
    # NER: the transfer windows' tokens weigh nothing, and their sentences are numbered after the training ones.
    windows = {"input_word_ids": np.ones((3, 4), np.int32), "label_weights": np.ones((3, 4), np.float32),
               "sentence": np.array([0, 1, 1], np.int32)}
    transfer = {"input_word_ids": np.full((2, 4), 2, np.int32), "label_weights": np.ones((2, 4), np.float32),
                "sentence": np.array([0, 1], np.int32)}
    merged = ner_run.with_transfer(windows, transfer)
    np.testing.assert_array_equal(merged["label_weights"].sum(-1), [4, 4, 4, 0, 0])
    np.testing.assert_array_equal(merged["sentence"], [0, 1, 1, 2, 3])
    np.testing.assert_array_equal(merged["input_word_ids"][3:], transfer["input_word_ids"])
    assert transfer["label_weights"].sum() == 8  # the caller's arrays are left as they were


SEQ = 12


def _ner_windows(n, seed):
    """NER windows of random lengths and ids, every real token tagged."""
    rng = np.random.default_rng(seed)
    mask = (np.arange(SEQ)[None, :] < rng.integers(2, SEQ + 1, n)[:, None]).astype(np.int32)
    return {"input_word_ids": mask * rng.integers(5, 25, (n, SEQ)).astype(np.int32), "input_mask": mask,
            "input_type_ids": np.zeros_like(mask), "label_ids": np.zeros_like(mask),
            "label_weights": mask.astype(np.float32), "sentence": np.arange(n, dtype=np.int32)}


def _squad_records(path, n, seed):
    """A file of `n` SQuAD training features (the original's record layout) of random lengths."""
    from bert_tf.tasks.squad.inputs import SquadRecords

    windows = _ner_windows(n, seed)
    ints = lambda values: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))  # noqa: E731
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(n):
            feature = {"unique_ids": ints([i]), "input_ids": ints(windows["input_word_ids"][i]),
                       "input_mask": ints(windows["input_mask"][i]), "segment_ids": ints(windows["input_type_ids"][i]),
                       "start_positions": ints([1]), "end_positions": ints([1]), "is_impossible": ints([0])}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return SquadRecords(str(path), n, SEQ, True)


@pytest.mark.parametrize("kind", ["ner", "squad", "embedder"])
def test_cached_teacher_outputs_reach_each_training_batchs_own_rows(tmp_path, kind, monkeypatch):
    """The cache's columns through the shuffle, the grouping by length and the cut to each batch's
    length: on every training batch, the teacher's outputs the labels carry are the teacher's own on
    that batch's inputs (per token, per span position, per text of each column; SQuAD's at every
    position of the batch, its padding's too)."""
    from bert_tf.data.batching import CARRIED
    from bert_tf.training import distillation
    from tests.tiny import write_vocab

    config = tiny_config()
    if kind == "ner":
        inner, data = NerTask(config, ["O", "B-X", "I-X"], max_seq_length=SEQ, length_bucket=1,
                              group_by_length=True), _ner_windows(23, 1)
    elif kind == "squad":
        inner = SquadTask(config, max_seq_length=SEQ, length_bucket=1, group_by_length=True)
        data = _squad_records(tmp_path / "train.tf_record", 23, 2)
    else:
        write_vocab(tmp_path / "vocab.txt")
        inner = EmbedderTask(config, vocab_file=str(tmp_path / "vocab.txt"), max_seq_length=SEQ, length_bucket=1)
        words = np.array(["the cat sat", "a dog", "red mat is big", "run", "blue dog and cat",
                          "the small mat sat on the dog ."] * 4, object)
        data = {"anchor": words[:23], "positive": words[::-1][:23], "negative": np.roll(words, 5)[:23]}
    passes = []
    computed = distillation.teacher_targets
    monkeypatch.setattr(distillation, "teacher_targets", lambda *a: passes.append(1) or computed(*a))
    teacher = inner.build_model()
    task = DistilledTask(inner, lambda: teacher, 2.0, 0.0, cache=distillation.TeacherCache(str(tmp_path), 5, "run"))
    task.build_model()
    prepared = task.with_teacher_outputs(data)
    assert len(passes) == 1 and (tmp_path / "teacher_outputs.npz").is_file()

    lengths = set()
    for x, y in task.dataset(prepared, "train", 4, seed=3).take(12):
        direct = inner.call_model(teacher, x, False)
        cached = inner.teacher_outputs({k[len(CARRIED):]: v for k, v in y.items() if k.startswith(CARRIED)}, direct)
        real = x["input_mask"].numpy().astype(bool)
        lengths.add(real.shape[1])
        for name, got in (cached.items() if isinstance(cached, dict) else [("outputs", cached)]):
            want = (direct[name] if isinstance(direct, dict) else direct).numpy()
            got = got.numpy()
            assert got.shape == want.shape, name
            if kind == "embedder":  # a vector per text of each column
                np.testing.assert_allclose(got, want, atol=1e-5)
            elif kind == "squad":  # every position of the batch: SQuAD's softmax reads the padding's too
                np.testing.assert_allclose(got, want, atol=1e-5, err_msg=name)
            else:  # NER's real tokens (its soft-target loss masks the others)
                np.testing.assert_allclose(got[real], want[real], atol=1e-5, err_msg=name)
    assert kind == "embedder" or len(lengths) > 1  # batches cut to several lengths

    # Read back, not computed again; a cache made for another run record is made anew.
    again = DistilledTask(inner, lambda: teacher, 2.0, 0.0, cache=distillation.TeacherCache(str(tmp_path), 5, "run"))
    again.build_model()
    read = again.with_teacher_outputs(data)
    assert len(passes) == 1
    columns = (lambda d: d.carried) if kind == "squad" else (lambda d: {k: v for k, v in d.items() if "/" in k})
    for name, value in columns(prepared).items():
        np.testing.assert_array_equal(columns(read)[name], value)
    other = DistilledTask(inner, lambda: teacher, 2.0, 0.0, cache=distillation.TeacherCache(str(tmp_path), 5, "other"))
    other.build_model()
    other.with_teacher_outputs(data)
    assert len(passes) == 2
    # A damaged file (a copy cut short, bytes of anything) is computed again, as a missing one.
    path = tmp_path / "teacher_outputs.npz"
    for damaged in (path.read_bytes()[: path.stat().st_size // 2], b"garbage, not a zip"):
        path.write_bytes(damaged)
        other.with_teacher_outputs(data)
        np.load(path)  # written whole again
    assert len(passes) == 4


def test_a_task_kind_that_reads_no_transfer_text_refuses_the_file_before_any_work():
    import types

    from bert_tf.errors import SettingError
    from bert_tf.tasks import driver
    from bert_tf.tasks.contract import FineTuning

    class Mine(FineTuning):  # a registered kind's part that offers no transfer_file reader
        kind = "mine"

        def check_given(self):
            pass

        def check(self, config):
            raise AssertionError("checked past the refusal")

    with pytest.raises(SettingError, match="--transfer_file is not offered for task kind mine"):
        driver.run_once(Mine(types.SimpleNamespace(transfer_file="unlabelled.tsv")))


def test_auto_resolves_once_a_resumed_run_takes_its_teacher_outputs_as_its_record_says(tmp_path):
    import json

    from bert_tf.tasks import classifier
    from bert_tf.tasks.distillation import teacher_outputs

    settings = classifier.Settings(output_dir=str(tmp_path), teacher="run", do_train=True, num_train_epochs=3.0)
    assert teacher_outputs(settings) == "cached"  # a new run: two epochs or more
    assert teacher_outputs(dataclasses.replace(settings, num_train_epochs=1.0)) == "in_step"
    earlier = RunRecord(kind="classifier", task_name="mrpc", labels=("0", "1"),
                        distillation={"teacher": "run", "teacher_outputs": "in_step"})
    (tmp_path / "fine_tuning_task.json").write_text(json.dumps(earlier.to_dict()))
    # Trained further to 3 epochs, the run that started with 1 keeps the teacher in the step.
    assert teacher_outputs(settings) == "in_step"
    assert teacher_outputs(dataclasses.replace(settings, teacher_outputs="cached")) == "cached"  # given: checked
    # The cache's pass runs batches of one replica's micro-batch: what each device holds in training.
    from bert_tf.tasks.distillation import Teacher, distilled

    cached = dataclasses.replace(earlier, distillation={"teacher": "run", "teacher_outputs": "cached"})
    teacher = Teacher("run", None, None, None)
    task = distilled(ClassifierTask(tiny_config(), ["0", "1"], max_seq_length=16),
                     dataclasses.replace(settings, gradient_accumulation_steps=4), teacher, cached, replicas=2)
    assert task.cache.batch_size == 32 // 8 and task.cache.folder == str(tmp_path)
    assert distilled(task.task, settings, teacher, earlier).cache is None  # in the step
