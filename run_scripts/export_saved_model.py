"""Export BERT as a SavedModel: TF Hub's encoder and preprocessor, or a fine-tuned model behind a
serving signature that takes raw text.

    # The encoder (TF Hub's BERT encoder interface), from Google's layout, ours or a .keras file:
    python run_scripts/export_saved_model.py --export_type=encoder \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --export_dir=/tmp/bert_encoder

    # Its text preprocessor (TF Hub's BERT preprocessor interface):
    python run_scripts/export_saved_model.py --export_type=preprocessor \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True --export_dir=/tmp/bert_preprocess

    # A fine-tuned model: the output_dir of run_classifier.py / run_squad.py / run_ner.py /
    # run_swag.py holds everything the export needs (task, labels, config, vocab, casing).
    python run_scripts/export_saved_model.py --export_type=classifier \
      --init_checkpoint=/tmp/mrpc_output --export_dir=/tmp/mrpc_serving

--export_type=classifier|squad|ner|swag reads the run's fine_tuning_task.json, bert_config.json
and vocab.txt from the --init_checkpoint folder (a run's folder, one of its ckpt-N or a .keras
file in it); --bert_config_file and --vocab_file override them, --seq_length (default: the run's
max_seq_length) sets the packing. The export is written under a temporary name and renamed when
complete; an existing --export_dir is replaced only with --overwrite.
"""

import os

from absl import app, flags, logging

from run_scripts.common_flags import fail, load_bert_config

FLAGS = flags.FLAGS

# The fine-tuned model (fine_tuning_task.json's "model") each task export takes, and its script.
TASK_MODELS = {
    "classifier": ("classifier", "run_classifier.py"),
    "squad": ("span_labeler", "run_squad.py"),
    "ner": ("token_classifier", "run_ner.py"),
    "swag": ("multiple_choice", "run_swag.py"),
}
EXPORT_TYPES = ["encoder", "preprocessor", *TASK_MODELS]

flags.DEFINE_enum("export_type", None, EXPORT_TYPES, "What to export.")
flags.DEFINE_string("export_dir", None, "The SavedModel directory to write.")
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model (default: the bert_config.json "
    "beside --init_checkpoint; a .keras file carries its own).",
)
flags.DEFINE_string(
    "init_checkpoint", None,
    "The model: Google's checkpoint (bert_model.ckpt), ours (a run's folder or OUTPUT_DIR/ckpt-N) or a .keras file.",
)
flags.DEFINE_string(
    "vocab_file", None,
    "The vocabulary file that the BERT model was trained on (default: the vocab.txt beside --init_checkpoint).",
)
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text (True for uncased models; task exports: the run's casing).",
)
flags.DEFINE_integer(
    "seq_length", 128,
    "The packed sequence length of the preprocessor and of task exports (task exports: default the run's "
    "max_seq_length).",
)
flags.DEFINE_integer("max_query_length", None, "squad: question pieces kept (default: the run's, 64).")
flags.DEFINE_bool("overwrite", False, "Replace an existing --export_dir.")

for _name in ("export_type", "export_dir"):
    flags.mark_flag_as_required(_name)


def _beside_checkpoint(name):
    """`name` in --init_checkpoint's folder (the folder itself, or the one holding the file)."""
    path = FLAGS.init_checkpoint
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, name)


def _existing(flag, default_name=None):
    """The file --`flag` names, else `default_name` beside --init_checkpoint (None when there is
    none); a named file that does not exist is an error."""
    path = getattr(FLAGS, flag)
    if path:
        if not os.path.isfile(path):
            fail(f"--{flag}={path}: no such file")
        return path
    if default_name and FLAGS.init_checkpoint:
        beside = _beside_checkpoint(default_name)
        return beside if os.path.isfile(beside) else None
    return None


def _checked_seq_length(seq_length, config):
    from bert_tf.export.common import check_seq_length

    try:
        check_seq_length(seq_length, config)
    except ValueError as e:
        fail(f"--seq_length: {e}")


def _restored(model):
    """`model` with --init_checkpoint's weights; a source that does not fit it, or lacks a task
    model's head, is an error."""
    from bert_tf.checkpoints import restore

    try:
        report = restore(model, FLAGS.init_checkpoint)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--init_checkpoint={FLAGS.init_checkpoint}: {e}")
    if report is not None and report.not_found:
        fail(
            f"--init_checkpoint={FLAGS.init_checkpoint} has no trained {type(model).__name__} head "
            f"({', '.join(report.not_found)}): export the output_dir of a fine-tuning run"
        )
    return model


def _from_keras_file(model_type, config):
    """The model a .keras file holds (its own dtype policy kept: a mixed-precision model stays one),
    checked against `model_type` and `config` (when given)."""
    from bert_tf.checkpoints import load_keras_model
    from bert_tf.models import BertEncoder

    try:
        model = load_keras_model(FLAGS.init_checkpoint)
    except (ValueError, FileNotFoundError, TypeError) as e:
        fail(f"--init_checkpoint={FLAGS.init_checkpoint}: {e}")
    if model_type is BertEncoder:
        model = getattr(model, "encoder", model)
    if not isinstance(model, model_type):
        fail(f"--init_checkpoint={FLAGS.init_checkpoint} holds a {type(model).__name__}, not a {model_type.__name__}")
    encoder = getattr(model, "encoder", model)
    if config is not None and config.encoder_kwargs() != encoder.bert_config().encoder_kwargs():
        fail(
            f"--init_checkpoint={FLAGS.init_checkpoint} was saved with another config than "
            f"--bert_config_file: {encoder.bert_config().encoder_kwargs()} vs {config.encoder_kwargs()}"
        )
    return model


def _config(required):
    path = _existing("bert_config_file", "bert_config.json")
    if path is None:
        if required:
            fail("--bert_config_file is required (no bert_config.json beside --init_checkpoint)")
        return None
    return load_bert_config(path)


def export_encoder():
    from bert_tf import tokenization
    from bert_tf.export import export_encoder as export
    from bert_tf.models import BertEncoder

    is_keras = FLAGS.init_checkpoint.endswith(".keras")
    config = _config(required=not is_keras)
    vocab_file = _existing("vocab_file", "vocab.txt")
    if vocab_file:
        try:
            tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
        except ValueError as e:
            fail(str(e))
    encoder = _from_keras_file(BertEncoder, config) if is_keras else _restored(BertEncoder.from_bert_config(config))
    export(encoder, FLAGS.export_dir, vocab_file, FLAGS.do_lower_case if vocab_file else None, FLAGS.overwrite)
    return f"a BertEncoder ({encoder.num_hidden_layers} layers, hidden {encoder.hidden_size})"


def export_preprocessor():
    from bert_tf.export import export_preprocessor as export

    vocab_file = _existing("vocab_file")
    if vocab_file is None:
        fail("--export_type=preprocessor needs --vocab_file")
    if FLAGS.seq_length < 3:
        fail(f"--seq_length={FLAGS.seq_length} leaves no room for [CLS] A [SEP] B [SEP]")
    export(vocab_file, FLAGS.do_lower_case, FLAGS.export_dir, FLAGS.seq_length, FLAGS.overwrite)
    return f"the preprocessor of {vocab_file} (do_lower_case={FLAGS.do_lower_case}, seq_length {FLAGS.seq_length})"


def _task_record(model_kind, script):
    from run_scripts.fine_tuning import TASK_FILE, read_task_record

    path = FLAGS.init_checkpoint
    directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    record = read_task_record(directory)
    if record is None:
        fail(
            f"--init_checkpoint={path}: no {TASK_FILE} in {directory}; a --export_type={FLAGS.export_type} export "
            f"reads the --output_dir of {script}"
        )
    if record.get("model", "classifier") != model_kind:
        fail(
            f"--init_checkpoint={path} holds a {record.get('model', 'classifier')} model (task "
            f"{record.get('task_name')!r}), not a {model_kind}: use the --export_type that matches it"
        )
    if FLAGS["do_lower_case"].present and FLAGS.do_lower_case != record["do_lower_case"]:
        fail(
            f"--do_lower_case={FLAGS.do_lower_case}, but the model in {directory} was fine-tuned with "
            f"--do_lower_case={record['do_lower_case']}"
        )
    return record


def export_task():
    from bert_tf import export
    from bert_tf.models import BertEncoder
    from run_scripts.fine_tuning import task_model

    model_kind, script = TASK_MODELS[FLAGS.export_type]
    record = _task_record(model_kind, script)
    is_keras = FLAGS.init_checkpoint.endswith(".keras")
    config = _config(required=not is_keras)
    vocab_file = _existing("vocab_file", "vocab.txt")
    if vocab_file is None:
        fail(f"--vocab_file is required (no vocab.txt beside --init_checkpoint={FLAGS.init_checkpoint})")
    if is_keras:
        model = _from_keras_file(_task_model_type(model_kind), config)
        config = model.encoder.bert_config()
    # The length the model was fine-tuned at, unless asked otherwise.
    seq_length = FLAGS.seq_length if FLAGS["seq_length"].present else record["max_seq_length"]
    _checked_seq_length(seq_length, config)
    if not is_keras:
        model = _restored(task_model(record, BertEncoder.from_bert_config(config)))
    common = dict(vocab_file=vocab_file, do_lower_case=record["do_lower_case"], seq_length=seq_length,
                  export_dir=FLAGS.export_dir, task=record, overwrite=FLAGS.overwrite)
    if model_kind == "classifier":
        export.export_classifier(model, record["labels"], record.get("label_kind", "single"), record["pair"], **common)
    elif model_kind == "span_labeler":
        query = FLAGS.max_query_length or record.get("max_query_length", 64)
        export.export_span_labeler(model, max_query_length=query, **common)
    elif model_kind == "token_classifier":
        export.export_token_classifier(
            model, record["labels"], window_context_words=record.get("window_context_words", 16), **common
        )
    else:
        export.export_multiple_choice(model, **common)
    return f"a {type(model).__name__} of task {record.get('task_name')!r} (seq_length {seq_length})"


def _task_model_type(model_kind):
    from bert_tf import models

    return {
        "classifier": models.BertClassifier,
        "span_labeler": models.BertSpanLabeler,
        "token_classifier": models.BertTokenClassifier,
        "multiple_choice": models.BertMultipleChoice,
    }[model_kind]


def main(argv):
    del argv
    from bert_tf.export import check_export_dir

    try:
        check_export_dir(FLAGS.export_dir, FLAGS.overwrite)  # before any work
    except FileExistsError as e:
        fail(f"--export_dir: {e}")
    if FLAGS.export_type != "preprocessor" and not FLAGS.init_checkpoint:
        fail(f"--export_type={FLAGS.export_type} needs --init_checkpoint")
    if FLAGS.max_query_length is not None and FLAGS.export_type != "squad":
        fail(f"--max_query_length is for --export_type=squad, not {FLAGS.export_type}")
    exporters = {"encoder": export_encoder, "preprocessor": export_preprocessor}
    try:
        what = exporters.get(FLAGS.export_type, export_task)()
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        fail(str(e))
    logging.info("Exported %s to %s", what, FLAGS.export_dir)


if __name__ == "__main__":
    app.run(main)
