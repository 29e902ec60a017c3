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

from bert_tf.tasks import registry
from run_scripts.common_flags import fail, library_call, load_bert_config

FLAGS = flags.FLAGS

# Besides the encoder and its preprocessor, every fine-tuning task kind (bert_tf.tasks.registry).
EXPORT_TYPES = ["encoder", "preprocessor", *registry.KINDS]

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


def _existing(flag, default_name=None):
    """The file --`flag` names, else `default_name` beside --init_checkpoint (None when there is
    none); a named file that does not exist is an error."""
    from bert_tf.checkpoints import sources

    path = getattr(FLAGS, flag)
    if path:
        if not os.path.isfile(path):
            fail(f"--{flag}={path}: no such file")
        return path
    return sources.beside(FLAGS.init_checkpoint, default_name) if default_name and FLAGS.init_checkpoint else None


def _config(required):
    path = _existing("bert_config_file", "bert_config.json")
    if path is None:
        if required:
            fail("--bert_config_file is required (no bert_config.json beside --init_checkpoint)")
        return None
    return load_bert_config(path)


def _check_casing(vocab_file):
    from bert_tf import tokenization

    if vocab_file:
        library_call(lambda: tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint))


def export_encoder():
    from bert_tf.checkpoints import sources
    from bert_tf.export import export_encoder as export
    from bert_tf.models import BertEncoder

    checkpoint = FLAGS.init_checkpoint
    is_keras = checkpoint.endswith(".keras")
    config = _config(required=not is_keras)
    vocab_file = _existing("vocab_file", "vocab.txt")
    _check_casing(vocab_file)
    at = f"--init_checkpoint={checkpoint}: "
    if is_keras:
        encoder = library_call(lambda: sources.from_keras_file(checkpoint, BertEncoder, config), at)
    else:
        encoder = library_call(lambda: sources.restored(BertEncoder.from_bert_config(config), checkpoint), at)
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


def export_task():
    from bert_tf.checkpoints import sources
    from bert_tf.export.common import check_seq_length

    checkpoint = FLAGS.init_checkpoint
    at = f"--init_checkpoint={checkpoint}: "
    record = library_call(lambda: sources.run_record_for(checkpoint, FLAGS.export_type), at)
    if FLAGS["do_lower_case"].present and FLAGS.do_lower_case != record.do_lower_case:
        fail(
            f"--do_lower_case={FLAGS.do_lower_case}, but the model in {record_dir(checkpoint)} was fine-tuned with "
            f"--do_lower_case={record.do_lower_case}"
        )
    config = _config(required=not checkpoint.endswith(".keras"))
    vocab_file = _existing("vocab_file", "vocab.txt")
    if vocab_file is None:
        fail(f"--vocab_file is required (no vocab.txt beside --init_checkpoint={checkpoint})")
    model, config = library_call(lambda: sources.task_model(checkpoint, record, config), at)
    # The length the model was fine-tuned at, unless asked otherwise.
    seq_length = FLAGS.seq_length if FLAGS["seq_length"].present else record.max_seq_length
    library_call(lambda: check_seq_length(seq_length, config), "--seq_length: ")
    options = {"max_query_length": FLAGS.max_query_length} if FLAGS.max_query_length else {}
    record.task_kind.export(model, record, vocab_file=vocab_file, seq_length=seq_length,
                            export_dir=FLAGS.export_dir, overwrite=FLAGS.overwrite, **options)
    return f"a {type(model).__name__} of task {record.task_name!r} (seq_length {seq_length})"


def record_dir(checkpoint):
    from bert_tf.tasks.record import run_directory

    return run_directory(checkpoint)


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
