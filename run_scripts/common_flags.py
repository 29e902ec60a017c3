"""Flags that several scripts share, defined once (names and defaults of the original release)."""

import os
import sys

from absl import flags


def fail(message):
    """Stops the script with exit code 1 and one clear line (no flag help dump)."""
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def load_bert_config(path, flag="bert_config_file"):
    """The BertConfig at `path`, or a one-line error naming the flag."""
    from bert_tf.config import BertConfig

    try:
        return BertConfig.from_json_file(path)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--{flag}: {e}")


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

    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        fail(f"--output_dir={output_dir} is a file, not a directory")
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
            fail(
                f"--output_dir={output_dir} holds a run of task {previous.get('task_name')!r} with "
                f"{key} {previous.get(key)!r}, not {record.get(key)!r}: use another --output_dir"
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
    from bert_tf.models import BertClassifier, BertSpanLabeler

    kind = record.get("model", "classifier")
    if kind == "span_labeler":
        return BertSpanLabeler(encoder)
    if kind == "classifier" and "labels" in record:
        outputs = 1 if record.get("label_kind") == "regression" else len(record["labels"])
        return BertClassifier(encoder, num_classes=outputs)
    fail(f"{source}: unknown kind of fine-tuned model {kind!r} (task {record.get('task_name')!r})")


def define_run_flags(max_seq_length=128, with_eval=True):
    """The flags the original's training scripts (run_pretraining, run_classifier, run_squad)
    share, with their names, defaults and help (run_squad: max_seq_length 384, no do_eval)."""
    flags.DEFINE_string("bert_config_file", None, "The config json file corresponding to the pre-trained BERT model.")
    flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
    flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained BERT model).")
    flags.DEFINE_integer(
        "max_seq_length", max_seq_length, "The maximum total input sequence length after WordPiece tokenization."
    )
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    if with_eval:
        flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
    if with_eval:
        flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
    flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call.")


def define_tpu_flags():
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
    flags.DEFINE_string(
        "tpu_name", None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url."
    )
    flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
    flags.DEFINE_string("gcp_project", None, "[Optional] Project name of the Cloud TPU.")
    flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL (the TPU's address).")
    flags.DEFINE_integer(
        "num_tpu_cores", 8, "Only used if `use_tpu` is True. Total number of TPU cores to use."
    )


def define_training_flags(default_seed=12345):
    """The flags every training script adds to the original's (one definition for all)."""
    from bert_tf.training import distribution

    flags.DEFINE_enum(
        "distribution_strategy", None, distribution.STRATEGIES,
        "Default: tpu with --use_tpu, mirrored with >1 GPU or --num_cpu_devices>1, else one_device.",
    )
    flags.DEFINE_integer("num_gpus", 0, "GPUs for the mirrored strategy (0: all visible, or the CPU devices).")
    flags.DEFINE_integer("num_cpu_devices", 0, "Split the host CPU into this many logical devices (to try distribution).")
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "adamw: the original's; lamb: for large batches.")
    flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16"], "Compute dtype policy.")
    flags.DEFINE_bool("jit_compile", False, "Compile the forward/backward pass with XLA.")
    flags.DEFINE_integer("gradient_accumulation_steps", 1, "Micro-batches per step (train_batch_size is the total).")
    flags.DEFINE_integer("steps_per_execution", None, "Steps per call (default 1; iterations_per_loop on TPU).")
    flags.DEFINE_integer("random_seed", default_seed, "Seed of initialisation, dropout and data order (exact resume).")
    flags.DEFINE_integer("keep_checkpoints", 5, "How many recent checkpoints to keep.")
    flags.DEFINE_bool("progress", True, "Show a progress bar with examples/s.")


def strategy_name(flag_values):
    from bert_tf.training import distribution

    return flag_values.distribution_strategy or distribution.default_strategy_name(
        flag_values.use_tpu, flag_values.num_gpus, flag_values.num_cpu_devices
    )


def create_strategy(flag_values):
    """The mixed-precision policy and the tf.distribute strategy the flags ask for, or a clear
    error naming the flags. `distribution.split_cpu(flag_values.num_cpu_devices)` must have run
    first, before TensorFlow started."""
    import keras
    import tensorflow as tf

    from bert_tf.training import distribution

    tf.get_logger().setLevel("WARNING")  # tf.distribute logs every cross-device reduction
    policies = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
    if flag_values.mixed_precision in policies:
        keras.mixed_precision.set_global_policy(policies[flag_values.mixed_precision])
    name = strategy_name(flag_values)
    # Strategies (collective ops in particular) must exist before TensorFlow runs any op.
    try:
        return distribution.create_strategy(
            name,
            flag_values.num_gpus,
            flag_values.num_cpu_devices,
            flag_values.tpu_name or flag_values.master,
            flag_values.tpu_zone,
            flag_values.gcp_project,
        )
    except Exception as e:  # noqa: BLE001 - every way of not reaching a TPU/cluster ends here
        where = ""
        if name == "tpu":
            where = (
                f" (no TPU reachable at tpu_name={flag_values.tpu_name!r}, master={flag_values.master!r}, "
                f"tpu_zone={flag_values.tpu_zone!r}, gcp_project={flag_values.gcp_project!r})"
            )
        fail(f"--distribution_strategy={name}{where}: {e}")


def settings_or_fail(settings_class, flag_values, **values):
    """The loop's settings (`TrainingSettings` or a subclass): the flags every training script
    has, plus `values`; a bad value is a one-line error naming the flag."""
    shared = dict(
        output_dir=flag_values.output_dir,
        train_batch_size=flag_values.train_batch_size,
        eval_batch_size=getattr(flag_values, "eval_batch_size", 8),
        learning_rate=flag_values.learning_rate,
        save_checkpoints_steps=flag_values.save_checkpoints_steps,
        optimizer=flag_values.optimizer,
        gradient_accumulation_steps=flag_values.gradient_accumulation_steps,
        steps_per_execution=steps_per_execution(flag_values),
        keep_checkpoints=flag_values.keep_checkpoints,
        jit_compile=flag_values.jit_compile,
        seed=flag_values.random_seed,
    )
    try:
        return settings_class(**shared, **values)
    except ValueError as e:
        fail(f"--{e}")  # the messages start with the setting's name, the flag's


def steps_per_execution(flag_values):
    return flag_values.steps_per_execution or (flag_values.iterations_per_loop if strategy_name(flag_values) == "tpu" else 1)


class Progress:
    """`on_log` for the training loop: a progress bar showing `fields` (label -> log key), or,
    with --noprogress, a log line every `every` steps."""

    def __init__(self, enabled, total, every, fields):
        self.every, self.fields, self.bar = every, fields, None
        if enabled:
            import tqdm

            self.bar = tqdm.tqdm(total=total, unit=" steps", dynamic_ncols=True)

    def __call__(self, step, logs):
        from absl import logging

        if self.bar is not None:
            self.bar.n = step
            self.bar.set_postfix(
                {
                    label: f"{logs[key]:.0f}" if key.endswith("_per_second") else f"{logs[key]:.3f}"
                    for label, key in self.fields.items()
                    if key in logs  # e.g. no accuracy for regression
                }
            )
        elif step % self.every == 0:
            logging.info("step %d: %s", step, {k: round(v, 4) for k, v in logs.items()})

    def close(self):
        if self.bar is not None:
            self.bar.close()


def train(trainer, data, init_checkpoint, on_log, progress):
    """`trainer.train` with its errors as one line; closes `progress` whatever happens."""
    from absl import logging

    try:
        started, step = trainer.train(data, init_checkpoint, on_log=on_log)
    except (ValueError, FileNotFoundError, FloatingPointError) as e:
        fail(str(e))
    finally:
        progress.close()
    logging.info("Training %s; now at step %d", started, step)
    return started


def restore_trained(trainer, init_checkpoint, output_dir):
    """Without training: the output_dir's latest checkpoint or `init_checkpoint`; there being
    neither is an error (a random model would be evaluated without a word)."""
    try:
        started = trainer.restore(init_checkpoint)
    except (ValueError, FileNotFoundError) as e:
        fail(f"--init_checkpoint={init_checkpoint}: {e}")
    if started == "initialised at random":
        _nothing_to_restore(output_dir)
    return started


def _nothing_to_restore(output_dir):
    fail(
        f"nothing to evaluate or predict with: --output_dir={output_dir} has no checkpoint and no "
        "--init_checkpoint was given (train first with --do_train)"
    )


def require_trained_model(init_checkpoint, output_dir):
    """Before any work, for a run that does not train: a model to restore must exist."""
    import tensorflow as tf

    if not init_checkpoint and not (os.path.isdir(output_dir) and tf.train.latest_checkpoint(output_dir)):
        _nothing_to_restore(output_dir)


def tpu_strategy(flag_values):
    """A TPUStrategy for --use_tpu, or a clear error naming the flags when no TPU is reachable."""
    import tensorflow as tf

    address = flag_values.tpu_name or flag_values.master
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=address, zone=flag_values.tpu_zone, project=flag_values.gcp_project
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as e:
        fail(
            f"--use_tpu is set but no TPU is reachable (tpu_name={flag_values.tpu_name!r}, "
            f"master={flag_values.master!r}, tpu_zone={flag_values.tpu_zone!r}): {e}"
        )
    return tf.distribute.TPUStrategy(resolver)


# ---------------------------------------------------------------------------------------------
# What the fine-tuning scripts share: their flags, the checks before any input is read, the
# record of the task beside the checkpoints, and the train-or-restore step.

TASK_FILE = "fine_tuning_task.json"


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
    against the checkpoint's name, the config, max_seq_length against it, warmup_proportion.
    Splits the CPU as --num_cpu_devices asks (before TensorFlow starts). Returns the BertConfig."""
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
    return config


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


def check_output_dir(flag_values, record, task_keys, model_keys):
    """What --output_dir holds must be this run's: nothing, or a record agreeing on `task_keys`
    (training: it resumes) or `model_keys` (evaluating or predicting with any run of the same
    head), and on do_lower_case; another run's checkpoints would be resumed with the wrong head."""
    import tensorflow as tf

    from absl import logging

    out = flag_values.output_dir
    if os.path.exists(out) and not os.path.isdir(out):
        fail(f"--output_dir={out} is a file, not a directory")
    previous = read_task_record(out) if os.path.isdir(out) else None
    if previous is None:
        if os.path.isdir(out) and tf.train.latest_checkpoint(out):
            fail(
                f"--output_dir={out} holds checkpoints of another kind of run (no {TASK_FILE}): use another "
                f"--output_dir (to start from those weights, pass --init_checkpoint={out})"
            )
        return
    for key in task_keys if flag_values.do_train else model_keys:
        if previous.get(key) != record[key]:
            fail(
                f"--output_dir={out} holds a run of task {previous.get('task_name')!r} with {key} "
                f"{previous.get(key)!r}, not {record[key]!r}: use another --output_dir"
            )
    if previous.get("do_lower_case", record["do_lower_case"]) != record["do_lower_case"]:
        fail(
            f"--do_lower_case={record['do_lower_case']}, but the model in --output_dir={out} was "
            f"fine-tuned with --do_lower_case={previous['do_lower_case']}"
        )
    if previous.get("max_seq_length", record["max_seq_length"]) != record["max_seq_length"]:
        logging.warning(
            "--max_seq_length=%d, but the model in %s was fine-tuned with %d: inputs are cut differently",
            record["max_seq_length"], out, previous["max_seq_length"],
        )


def write_task_files(output_dir, record, config, vocab_file):
    """What an export or a later run needs to read the model: the task record, the config and
    the vocab, written atomically into output_dir."""
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
