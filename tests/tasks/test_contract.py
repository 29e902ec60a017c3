"""The contract's promise, kept: a new fine-tuning task is one folder plus one registry entry.

A throwaway task (`wordscore`: a sentence's score, regression) is written from the contract alone
into a temporary folder outside the package, with a script of flags and one call. It trains,
evaluates, predicts, resumes and exports through the package's own driver, loop, checkpoints and
exports, with nothing of `bert_tf/` edited; its own record field round-trips through
fine_tuning_task.json."""

import json
import os
import textwrap

import pytest

from tests import warm_scripts
from tests.run_scripts.fine_tuning_helpers import read_results, script_flags, write_model

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "very", "film", "plot", "the", "."]

# The task folder: its model, its Task (built from the classifier's parts, as a new task may), its
# FineTuning, its export, and the registry entry.
FILES = {
    "__init__.py": '''
        """A throwaway task: one registry entry, made when the folder is imported."""
        from bert_tf.runs import registry
        from wordscore.model import WordScorer

        registry.register(registry.TaskKind(
            name="wordscore", script="run_wordscore.py", model_class=WordScorer, head_layer="classifier",
            head_names=("output_weights", "output_bias"), record_fields=("label_kind", "pair", "score_scale"),
            task="wordscore.task:WordScoreTask", exporter="wordscore.export:export_run",
            fine_tuning="wordscore.fine_tuning:WordScoreFineTuning",
            model_args=lambda record: {"num_classes": 1},
        ))
    ''',
    "model.py": '''
        import keras

        from bert_tf.models import BertClassifier


        @keras.saving.register_keras_serializable(package="wordscore")
        class WordScorer(BertClassifier):
            """One score per sentence."""
    ''',
    "task.py": '''
        from bert_tf.models import BertEncoder
        from bert_tf.tasks.classifier.task import ClassifierTask
        from wordscore.model import WordScorer


        class WordScoreTask(ClassifierTask):
            def __init__(self, bert_config, **kwargs):
                super().__init__(bert_config, (), "regression", pair=False, **kwargs)

            def build_model(self):
                return WordScorer(BertEncoder.from_bert_config(self.bert_config), num_classes=1)
    ''',
    "export.py": '''
        from bert_tf.tasks.classifier.export import export_classifier


        def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, serving=None, **_):
            return export_classifier(model, (), "regression", False, vocab_file, record.do_lower_case, seq_length,
                                     export_dir, task=record.to_dict(), overwrite=overwrite, serving=serving)
    ''',
    "fine_tuning.py": '''
        import os

        import numpy as np

        from bert_tf.io_utils import atomic_write
        from bert_tf.runs.record import RESUMED_FIELDS, RunRecord
        from bert_tf.tasks.classifier.inputs import encode_examples
        from bert_tf.tasks.classifier.processors import InputExample
        from bert_tf.tasks.contract import FineTuning, UsageError
        from wordscore.task import WordScoreTask


        def read(path):
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{path}: no such file")
            with open(path, encoding="utf-8") as f:
                rows = [line.rstrip("\\n").split("\\t") for line in f if line.strip()]
            return [InputExample(f"{i}", text, label=score) for i, (text, score) in enumerate(rows)]


        class WordScoreFineTuning(FineTuning):
            kind = "wordscore"
            search_flags = ("score_scale",)

            def check_given(self):
                if not self.flags.data_dir:
                    raise UsageError("--data_dir is required")

            def check(self, config):
                if self.flags.score_scale <= 0:
                    raise UsageError(f"--score_scale={self.flags.score_scale} must be positive")

            def read_inputs(self, config):
                f = self.flags
                self.sets = {split: read(os.path.join(f.data_dir, f"{split}.tsv"))
                             for split, wanted in (("train", f.do_train), ("dev", f.do_eval), ("test", f.do_predict))
                             if wanted}

            def record(self, group_by_length):
                f = self.flags
                return RunRecord(kind="wordscore", task_name="wordscore", label_kind="regression", pair=False,
                                 do_lower_case=f.do_lower_case, max_seq_length=f.max_seq_length,
                                 group_by_length=group_by_length, options={"score_scale": f.score_scale})

            def fields_to_match(self, do_train):
                return ("kind", "score_scale", *RESUMED_FIELDS) if do_train else ("kind",)

            def build_task(self, config, record, length_bucket):
                return WordScoreTask(config, vocab_file=self.flags.vocab_file, do_lower_case=record.do_lower_case,
                                     max_seq_length=record.max_seq_length, length_bucket=length_bucket)

            def encode(self, task):
                self.features = {name: encode_examples(examples, (), "regression", name)
                                 for name, examples in self.sets.items()}
                return len(self.sets.get("train", ()))

            def train_data(self):
                return self.features.get("train")

            def evaluate(self, trainer):
                self.announce("evaluation", len(self.sets["dev"]))
                results = trainer.evaluate(self.features["dev"])
                trainer.write_eval_results(results)
                return results

            def predict(self, trainer):
                scores = trainer.predict(self.features["test"])["predictions"][: len(self.sets["test"])]
                if trainer.is_chief:
                    with atomic_write(os.path.join(self.flags.output_dir, "test_scores.txt")) as out:
                        out.writelines(f"{float(s):.6f}\\n" for s in np.ravel(scores))
    ''',
}

SCRIPT = '''
    """Fine-tune the wordscore task: flags and one call."""
    from absl import app, flags

    import run_scripts  # noqa: F401
    import wordscore  # noqa: F401 - registers the kind
    from run_scripts import common_flags, fine_tuning

    FLAGS = flags.FLAGS
    common_flags.define_fine_tuning_flags("The folder of train.tsv, dev.tsv and test.tsv (sentence, score).")
    common_flags.define_padding_flags()
    flags.DEFINE_float("score_scale", 1.0, "The task's own setting, kept in its run record.")


    def main(argv):
        fine_tuning.main(FLAGS, "wordscore")


    if __name__ == "__main__":
        app.run(main)
'''


def _write_task(root):
    folder = root / "wordscore"
    folder.mkdir(parents=True)
    for name, text in FILES.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    (root / "run_wordscore.py").write_text(textwrap.dedent(SCRIPT).lstrip())


def _write_data(directory):
    directory.mkdir()
    sentences = [("very good film .", "1.0"), ("good plot .", "0.8"), ("bad film .", "0.1"),
                 ("very bad plot .", "0.0"), ("the film .", "0.5"), ("good .", "0.9")]
    text = "".join(f"{s}\t{score}\n" for s, score in sentences * 4)
    for split in ("train", "dev", "test"):
        (directory / f"{split}.tsv").write_text(text)


def _run(root, args, code=None):
    # Only PYTHONPATH: the rest of this process's environment (warm_scripts adds it) lets the run
    # fork from the warm interpreter; another TensorFlow variable would need a real process.
    env = {"PYTHONPATH": os.pathsep.join([str(root), REPO])}
    command = ["-c", code] if code else [str(root / "run_wordscore.py"), *args]
    return warm_scripts.run(command, env=env, timeout=600)


def test_a_task_outside_the_package_runs_on_the_driver_resumes_and_exports(tmp_path):
    root = tmp_path / "elsewhere"
    _write_task(root)
    _write_data(tmp_path / "data")
    model = write_model(tmp_path / "model", VOCAB)
    out = tmp_path / "out"
    flags = script_flags(model, dict(
        data_dir=tmp_path / "data", output_dir=out, do_train=True, do_eval=True, do_predict=True,
        max_seq_length=16, train_batch_size=8, learning_rate=1e-3, num_train_epochs=2, score_scale=2.5,
    ))

    done = _run(root, flags)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Task wordscore; strategy" in done.stderr
    record = json.loads((out / "fine_tuning_task.json").read_text())
    assert record["kind"] == "wordscore" and record["score_scale"] == 2.5  # its own field, written flat
    assert set(read_results(out / "eval_results.txt")) >= {"eval_loss", "global_step"}
    assert len((out / "test_scores.txt").read_text().splitlines()) == 24

    step = read_results(out / "eval_results.txt")["global_step"]
    checkpoints = sorted(p.name for p in out.iterdir() if p.name.startswith("ckpt-"))
    again = _run(root, flags)  # the same command: the run is complete, nothing trained twice
    assert again.returncode == 0, again.stderr[-3000:]
    assert read_results(out / "eval_results.txt")["global_step"] == step
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("ckpt-")) == checkpoints
    other = _run(root, [*flags, "--score_scale=3"])  # its own field decides what resumes
    assert other.returncode == 1 and "score_scale" in other.stderr.splitlines()[-1], other.stderr[-2000:]
    bad = _run(root, [*flags, "--score_scale=-1"])  # the task's own check: its words, one line
    assert bad.returncode == 1
    assert bad.stderr.splitlines()[-1] == "run_wordscore.py: error: --score_scale=-1.0 must be positive"

    # Evaluating the trained run from another folder: restored through the package's checkpoints.
    evaluated = tmp_path / "evaluated"
    only_eval = script_flags(model, dict(data_dir=tmp_path / "data", output_dir=evaluated, init_checkpoint=out,
                                         do_eval=True, max_seq_length=16, score_scale=2.5))
    done = _run(root, only_eval)
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_results(evaluated / "eval_results.txt")["eval_loss"] == read_results(out / "eval_results.txt")[
        "eval_loss"]

    export_dir = tmp_path / "export"
    code = textwrap.dedent(f"""
        import wordscore
        import tensorflow as tf
        from bert_tf.export import exports
        print(exports.read("wordscore", init_checkpoint={str(out)!r}).write({str(export_dir)!r}))
        loaded = tf.saved_model.load({str(export_dir)!r})
        print(loaded.signatures["serving_default"](text_a=tf.constant(["very good film ."])))
    """)
    exported = _run(root, [], code)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "a WordScorer of task 'wordscore'" in exported.stdout
