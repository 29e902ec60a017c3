"""What the fine-tuning scripts (run_classifier, run_squad, run_ner, run_swag) share: their
flags, the checks before any input is read, the record of the task left beside the checkpoints
(read by exports, convert_checkpoint and later runs), and the train-or-restore step."""

import os

from absl import flags

from run_scripts.common_flags import (
    Progress,
    define_run_flags,
    define_tpu_flags,
    define_training_flags,
    fail,
    load_bert_config,
    require_trained_model,
    restore_trained,
    settings_or_fail,
    train,
)

# What a fine-tuning script leaves in its output_dir beside the checkpoints: the task, its labels
# and input settings (read by exports, convert_checkpoint and later runs).
TASK_FILE = "fine_tuning_task.json"


def check_task_output_dir(output_dir, record, same):
    """What output_dir holds must be this run's: nothing, or a TASK_FILE whose keys `same`
    equal `record`'s (and the same casing); another run's checkpoints would be resumed with the
    wrong head, or fail late. A different max_seq_length is only a warning."""
    import json

    import tensorflow as tf
    from absl import logging

    from bert_tf.io_utils import check_output_dir

    try:
        check_output_dir(output_dir)  # a file, under a file, or not writable: before any work
    except ValueError as e:
        fail(str(e))
    path = os.path.join(output_dir, TASK_FILE)
    if not os.path.isfile(path):
        if os.path.isdir(output_dir) and tf.train.latest_checkpoint(output_dir):
            fail(
                f"--output_dir={output_dir} holds checkpoints of another kind of run (no {TASK_FILE}): use "
                f"another --output_dir (to start from those weights, pass --init_checkpoint={output_dir})"
            )
        return
    try:
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"--output_dir: cannot read {path}: {e}")
    for key in same:
        if previous.get(key) != record.get(key):
            detail = f" with {key} {previous.get(key)!r}" if key != "task_name" else ""
            fail(
                f"--output_dir={output_dir} holds a run of task {previous.get('task_name')!r}{detail}, "
                f"not {record.get(key)!r}: use another --output_dir"
            )
    if previous.get("do_lower_case", record["do_lower_case"]) != record["do_lower_case"]:
        fail(
            f"--do_lower_case={record['do_lower_case']}, but the model in --output_dir={output_dir} was "
            f"fine-tuned with --do_lower_case={previous['do_lower_case']}"
        )
    if previous.get("max_seq_length", record["max_seq_length"]) != record["max_seq_length"]:
        logging.warning(
            "--max_seq_length=%d, but the model in %s was fine-tuned with %d: inputs are cut differently",
            record["max_seq_length"], output_dir, previous["max_seq_length"],
        )


def write_task_files(output_dir, record, config, vocab_file):
    """What an export or a later run needs to read the model in output_dir: TASK_FILE (the
    task, its labels and input settings), bert_config.json and vocab.txt."""
    import json
    import shutil

    from bert_tf.io_utils import atomic_write

    os.makedirs(output_dir, exist_ok=True)
    with atomic_write(os.path.join(output_dir, TASK_FILE)) as f:
        json.dump(record, f, indent=2, sort_keys=True)
        f.write("\n")
    config.to_json_file(os.path.join(output_dir, "bert_config.json"))
    vocab = os.path.join(output_dir, "vocab.txt")
    if os.path.abspath(vocab_file) != os.path.abspath(vocab):
        with open(vocab_file, "rb") as src, atomic_write(vocab, "wb") as dst:
            shutil.copyfileobj(src, dst)


def task_model(record, encoder, source=TASK_FILE):
    """The fine-tuned model a TASK_FILE record describes, on `encoder` (its weights to be
    restored by the caller)."""
    from bert_tf.models import BertClassifier, BertMultipleChoice, BertSpanLabeler, BertTokenClassifier

    kind = record.get("model", "classifier")
    if kind == "span_labeler":
        return BertSpanLabeler(encoder)
    if kind == "token_classifier":
        return BertTokenClassifier(encoder, num_classes=len(record["labels"]))
    if kind == "multiple_choice":
        return BertMultipleChoice(encoder, num_choices=record["num_choices"])
    if kind == "classifier" and "labels" in record:
        outputs = 1 if record.get("label_kind") == "regression" else len(record["labels"])
        return BertClassifier(encoder, num_classes=outputs)
    fail(f"{source}: unknown kind of fine-tuned model {kind!r} (task {record.get('task_name')!r})")


def define_fine_tuning_flags(data_dir_help):
    """The flags of a fine-tuning script: the original run_classifier's and the new training
    flags (`data_dir` described by `data_dir_help`)."""
    flags.DEFINE_string("data_dir", None, data_dir_help)
    define_run_flags()
    flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text (True for uncased models).")
    flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the test set.")
    flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training to perform linear learning rate warmup for.")
    define_tpu_flags()
    define_training_flags()
    for name in ("bert_config_file", "vocab_file", "output_dir"):
        flags.mark_flag_as_required(name)


def define_tfds_flags(example):
    flags.DEFINE_string("tfds_name", None, f"Read the data through tensorflow-datasets (e.g. {example}).")
    flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets' data_dir (default: its own).")
    flags.DEFINE_bool("tfds_download", False, "Download and prepare the --tfds_name dataset if it is not there yet.")


def check_fine_tuning_flags(flag_values):
    """What a fine-tuning script checks before reading any input: something to do, the casing
    against the checkpoint's name, the config, max_seq_length against it, warmup_proportion, a
    model to restore when not training. Splits the CPU as --num_cpu_devices asks (before TensorFlow starts). Returns the BertConfig."""
    from bert_tf import tokenization
    from bert_tf.training import distribution

    f = flag_values
    if not (f.do_train or f.do_eval or f.do_predict):
        fail("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    distribution.split_cpu(f.num_cpu_devices)
    try:
        tokenization.validate_case_matches_checkpoint(f.do_lower_case, f.init_checkpoint)
    except ValueError as e:
        fail(str(e))
    config = load_bert_config(f.bert_config_file)
    if f.max_seq_length > config.max_position_embeddings:
        fail(
            f"Cannot use sequence length {f.max_seq_length} because the BERT model was only trained up to "
            f"sequence length {config.max_position_embeddings} (--max_seq_length vs max_position_embeddings of "
            f"--bert_config_file={f.bert_config_file})"
        )
    if not 0.0 <= f.warmup_proportion <= 1.0:
        fail(f"--warmup_proportion={f.warmup_proportion} must be between 0 and 1")
    if not f.do_train:
        require_trained_model(f.init_checkpoint, f.output_dir)
    return config


def check_batch_sizes(flag_values, replicas):
    """The batch sizes against the number of replicas (and accumulation steps), before any
    work: one line naming the flag."""
    f = flag_values
    per_step = replicas * f.gradient_accumulation_steps
    checks = [("train_batch_size", per_step, f"{replicas} replica(s) x {f.gradient_accumulation_steps} accumulation step(s)")]
    checks += [(name, replicas, f"{replicas} replica(s)") for name in ("eval_batch_size", "predict_batch_size") if hasattr(f, name)]
    for name, divisor, what in checks:
        value = getattr(f, name)
        if value >= 1 and value % divisor:
            fail(f"--{name}={value} is not divisible by {what}")


def read_task_record(directory):
    """The fine_tuning_task.json a run left in `directory`, or None."""
    import json

    path = os.path.join(directory, TASK_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")


def fine_tuning_settings(flag_values, num_train_examples):
    """`(TrainingSettings, num_train_steps)` from the flags: the original's steps (examples /
    train_batch_size x epochs) and warmup; training with no step is an error."""
    from bert_tf.training.trainer import TrainingSettings

    f = flag_values
    steps = int(num_train_examples / max(f.train_batch_size, 1) * f.num_train_epochs)
    settings = settings_or_fail(
        TrainingSettings, f, predict_batch_size=f.predict_batch_size, num_train_steps=max(steps, 1),
        num_warmup_steps=int(steps * f.warmup_proportion),
    )
    if f.do_train and steps < 1:
        fail(
            f"{num_train_examples} training examples / --train_batch_size={f.train_batch_size} x "
            f"--num_train_epochs={f.num_train_epochs} gives no training step"
        )
    return settings, steps


def train_or_restore(trainer, flag_values, train_data, record, config, fields):
    """--do_train: trains (the task files written after the first step, before the first
    checkpoint, so that every checkpoint has its record beside it and a run that fails to start
    leaves nothing); otherwise restores the output_dir's latest checkpoint or --init_checkpoint.
    `fields`: the progress bar's label -> log key."""
    from absl import logging

    f = flag_values
    if not f.do_train:
        started = restore_trained(trainer, f.init_checkpoint, f.output_dir)
        if "initialised afresh" in started:
            logging.warning("The task head is not in %s: its outputs are untrained", f.init_checkpoint)
        logging.info("Model %s", started)
        return started
    progress = Progress(f.progress, trainer.settings.num_train_steps, f.iterations_per_loop, fields)
    written = []

    def on_log(step, logs):
        if not written and trainer.is_chief:
            write_task_files(f.output_dir, record, config, f.vocab_file)
            written.append(True)
        progress(step, logs)

    return train(trainer, train_data, f.init_checkpoint, on_log, progress)


def log_results(results, title="Eval results"):
    from absl import logging

    logging.info("***** %s *****", title)
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])
