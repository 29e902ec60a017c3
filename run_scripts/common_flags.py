"""Flags that several scripts share, defined once (names and defaults of the original release)."""

import dataclasses
import os
import sys

from absl import flags, logging


def fail(message):
    """Stops the script with exit code 1 and one clear line (no flag help dump)."""
    raise SystemExit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def load_bert_config(path, flag="bert_config_file"):
    """The BertConfig at `path`, or a one-line error naming the flag."""
    from bert_tf.checkpoints import sources

    config, warnings = library_call(lambda: sources.read_config(path, flag), "--")
    for warning in warnings:  # e.g. a misspelt key: one log line each, not Python's two
        logging.warning("--%s", warning)
    return config


def define_run_flags(max_seq_length=128, with_eval=True, search=False):
    """The flags the original's training scripts (run_pretraining, run_classifier, run_squad)
    share, with their names, defaults and help (run_squad: max_seq_length 384, no do_eval);
    `search`: train_batch_size and learning_rate take lists (`define_search_flags`)."""
    flags.DEFINE_string("bert_config_file", None, "The config json file corresponding to the pre-trained BERT model.")
    flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")
    flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained BERT model).")
    flags.DEFINE_integer(
        "max_seq_length", max_seq_length, "The maximum total input sequence length after WordPiece tokenization."
    )
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    if with_eval:
        flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    _number_flag("train_batch_size", 32, "Total batch size for training.", search)
    if with_eval:
        flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    _number_flag("learning_rate", 5e-5, "The initial learning rate for Adam.", search)
    flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
    flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call.")


def define_tpu_flags():
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
    flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url.")
    flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
    flags.DEFINE_string("gcp_project", None, "[Optional] Project name of the Cloud TPU.")
    flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL (the TPU's address).")
    flags.DEFINE_integer("num_tpu_cores", 8, "Only used if `use_tpu` is True. Total number of TPU cores to use.")


def define_training_flags(default_seed=12345):
    """The flags every training script adds to the original's (one definition for all)."""
    from bert_tf.training import distribution

    flags.DEFINE_enum(
        "distribution_strategy", None, distribution.STRATEGIES,
        "Default: tpu with --use_tpu, mirrored with >1 GPU or --num_cpu_devices>1, else one_device.",
    )
    flags.DEFINE_integer("num_gpus", 0, "GPUs for the mirrored strategy (0: all visible, or the CPU devices).")
    flags.DEFINE_integer(
        "num_cpu_devices", 0, "Split the host CPU into this many logical devices (to try distribution)."
    )
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "adamw: the original's; lamb: for large batches.")
    flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16"], "Compute dtype policy.")
    flags.DEFINE_bool("jit_compile", None, "Compile the training step with XLA (default: on GPU/TPU; on CPU this "
                      "machine's measured choice, saved by `python bench/finetuning.py --save_defaults`, else off).")
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
    from bert_tf.training.speed import choose_jit_compile

    tpu = strategy_name(flag_values) == "tpu"
    jit = log_jit_choice("jit_compile", choose_jit_compile(flag_values.jit_compile, use_tpu=tpu))
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
        jit_compile=jit,
        seed=flag_values.random_seed,
    )
    try:
        return settings_class(**shared, **values)
    except ValueError as e:
        fail(f"--{e}")  # the messages start with the setting's name, the flag's


def steps_per_execution(flag_values):
    return flag_values.steps_per_execution or (
        flag_values.iterations_per_loop if strategy_name(flag_values) == "tpu" else 1
    )


def tpu_strategy(flag_values):
    """A TPUStrategy for --use_tpu, or a clear error naming the flags when no TPU is reachable."""
    from bert_tf.training import distribution

    f = flag_values
    try:
        return distribution.create_strategy("tpu", 0, 0, f.tpu_name or f.master, f.tpu_zone, f.gcp_project)
    except Exception as e:  # every way of not reaching a TPU ends here
        fail(
            f"--use_tpu is set but no TPU is reachable (tpu_name={f.tpu_name!r}, master={f.master!r}, "
            f"tpu_zone={f.tpu_zone!r}): {e}"
        )


def library_call(work, prefix="", flag_names=()):
    """`work()`, with a library error (its message starts with the setting at fault, or says
    what is wrong) as one line; `prefix` names the flag or file when the message does not, and
    the settings `flag_names` are written as flags (`as_flags`)."""
    try:
        return work()
    except (ValueError, FileNotFoundError, FloatingPointError) as e:
        fail(as_flags(f"{prefix}{e}", flag_names) if flag_names else f"{prefix}{e}")


def train(trainer, data, init_checkpoint, fields, flag_values):
    """`trainer.train` with a progress display, its errors as one line."""
    return _with_progress(trainer, flag_values, fields, lambda p: trainer.train(data, init_checkpoint, on_log=p)[0])


def _with_progress(trainer, flag_values, fields, work):
    """`work(progress)` (training) with a progress display; its errors as one line."""
    from bert_tf.training.progress import Progress

    f = flag_values
    progress = Progress(f.progress, trainer.settings.num_train_steps, f.iterations_per_loop, fields)
    try:
        status = library_call(lambda: work(progress))
    finally:
        progress.close()
    logging.info("Training %s; now at step %d", status, trainer.global_step)
    return status


def restore_trained(trainer, init_checkpoint):
    """Without training: the output_dir's latest checkpoint or --init_checkpoint, or an error."""
    from bert_tf.training import run
    from bert_tf.training.trainer import RANDOM

    status = library_call(lambda: trainer.restore(init_checkpoint), f"--init_checkpoint={init_checkpoint}: ")
    if status.start == RANDOM:
        fail(f"--{run.nothing_to_restore(trainer.settings.output_dir)}")
    return status


# --- Fine-tuning scripts (run_classifier, run_squad, run_ner, run_swag) ---


def define_fine_tuning_flags(data_dir_help):
    """The flags of a fine-tuning script: the original run_classifier's and the new training
    flags (`data_dir` described by `data_dir_help`)."""
    flags.DEFINE_string("data_dir", None, data_dir_help)
    define_run_flags(search=True)
    flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text (True for uncased models).")
    flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the test set.")
    flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
    define_epoch_flags()
    define_tpu_flags()
    define_training_flags()
    define_lora_flags()
    define_search_flags()
    flags.mark_flag_as_required("output_dir")
    require_unless_hf_folder(("bert_config_file", "vocab_file"))


def define_epoch_flags():
    _number_flag("num_train_epochs", 3.0, "Total number of training epochs to perform.", True)
    flags.DEFINE_float("warmup_proportion", 0.1, "Proportion of training to perform linear learning rate warmup for.")


def define_tfds_flags(example):
    flags.DEFINE_string("tfds_name", None, f"Read the data through tensorflow-datasets (e.g. {example}).")
    flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets' data_dir (default: its own).")
    flags.DEFINE_bool("tfds_download", False, "Download and prepare the --tfds_name dataset if it is not there yet.")


# The original scripts' words, run_classifier's unmatched closing quote included.
_NOTHING_TO_DO = {
    ("do_train", "do_eval", "do_predict"): "At least one of `do_train`, `do_eval` or `do_predict' must be True.",
    ("do_train", "do_predict"): "At least one of `do_train` or `do_predict` must be True.",
}


def check_fine_tuning_flags(flag_values, actions=("do_train", "do_eval", "do_predict")):
    """What a fine-tuning script checks before reading any input: something to do, the LoRA flags
    (the rank below the model's widths), the casing against the checkpoint's name, the config (a
    Hugging Face folder's: `hf_folder_flags`), max_seq_length against it, warmup_proportion, a model
    to restore when not training. Splits the CPU as --num_cpu_devices asks (before TensorFlow
    starts). Returns the BertConfig."""
    from bert_tf import tokenization
    from bert_tf.checkpoints import sources
    from bert_tf.training import distribution

    f = flag_values
    if not any(getattr(f, name) for name in actions):
        fail(_NOTHING_TO_DO[tuple(actions)])
    distribution.split_cpu(f.num_cpu_devices)
    lora_settings(f)
    library_call(lambda: tokenization.validate_case_matches_checkpoint(f.do_lower_case, f.init_checkpoint))
    config = hf_folder_flags(f) or load_bert_config(f.bert_config_file)
    library_call(
        lambda: config.check_seq_length(f.max_seq_length),
        f"--max_seq_length={f.max_seq_length} vs max_position_embeddings of "
        f"--{sources.config_setting(f.bert_config_file, f.init_checkpoint)}: ",
    )
    if f.lora_rank:
        from bert_tf.models import lora

        library_call(lambda: lora.check_rank(f.lora_rank, config.hidden_size, config.intermediate_size),
                     flag_names=("lora_rank",))
    if not 0.0 <= f.warmup_proportion <= 1.0:
        fail(f"--warmup_proportion={f.warmup_proportion} must be between 0 and 1")
    check_output_dir_flag(f.output_dir)
    if not f.do_train:
        check_trained_model(f)
    return config


def check_output_dir_flag(output_dir):
    from bert_tf.io_utils import check_output_dir

    library_call(lambda: check_output_dir(output_dir))  # a file, under a file, not writable


def check_trained_model(flag_values):
    """Before any work, for a run that does not train: a model to restore must exist."""
    from bert_tf.training import run

    f = flag_values
    if not run.has_model(f.output_dir, f.init_checkpoint):
        fail(f"--{run.nothing_to_restore(f.output_dir)}")


def check_batch_sizes(flag_values, replicas):
    """The batch sizes against the number of replicas (and accumulation steps), before any
    work: one line naming the flag."""
    from bert_tf.training.trainer import check_batch_sizes as check

    library_call(lambda: check(flag_values, replicas), "--")


def check_run_output_dir(flag_values, record, same):
    """--output_dir must hold nothing, or a run of this task (`same`: the record fields that
    must match); warnings are logged."""
    from bert_tf.training import run

    names = ("output_dir", "init_checkpoint", "do_lower_case", "max_seq_length", "lora_rank", "lora_alpha")
    try:
        warnings = run.check_output_dir(flag_values.output_dir, lora_settings(flag_values, record), same)
    except ValueError as e:
        fail(as_flags(str(e), names))
    for warning in warnings:
        logging.warning("%s", as_flags(warning, names))


def as_flags(message, names):
    """A library message with the settings `names` written as the script's flags: `output_dir=X`
    and a bare `output_dir` become `--output_dir=X`, `--output_dir` (not inside a path or word)."""
    import re

    pattern = r"(?<![\w\-/.])(" + "|".join(map(re.escape, names)) + r")(?=[=\s:,;)]|$)"
    return re.sub(pattern, r"--\1", message)


def fine_tuning_settings(flag_values, num_train_examples, length_bucket, loss_reads_padding=False):
    """`(TrainingSettings, num_train_steps)` from the flags: the original's steps (examples /
    train_batch_size x epochs) and warmup, whether padding is skipped (--skip_padding, unset: the
    default for the batches' `length_bucket`, off where the task's loss reads the padding
    positions' outputs; logged); training with no step is an error."""
    from bert_tf.training import run, settings, speed
    from bert_tf.training.trainer import TrainingSettings

    f = flag_values
    steps, warmup = run.training_steps(num_train_examples, f.train_batch_size, f.num_train_epochs, f.warmup_proportion)
    training = settings_or_fail(
        TrainingSettings, f, predict_batch_size=f.predict_batch_size, num_train_steps=max(steps, 1),
        num_warmup_steps=warmup, **lora_settings(f),
    )
    skip, platform = f.skip_padding, speed.current_platform(f.use_tpu)
    if skip is None:
        skip = not loss_reads_padding and settings.default_skip_padding(length_bucket, training.jit_compile, platform)
        logging.info("skip_padding=%s: the default with length_bucket=%s, jit_compile=%s on %s%s", skip, length_bucket,
                     training.jit_compile, platform, ", a loss over the padding positions" * loss_reads_padding)
    training = library_call(lambda: dataclasses.replace(training, skip_padding=skip), "--")
    if f.do_train and steps < 1:
        fail(
            f"{num_train_examples} training examples / --train_batch_size={f.train_batch_size} x "
            f"--num_train_epochs={f.num_train_epochs} gives no training step"
        )
    return training, steps


def train_or_restore(trainer, flag_values, train_data, record, config, fields):
    """--do_train: trains, the run's files written beside the first checkpoint; otherwise
    restores the output_dir's latest checkpoint or --init_checkpoint. `fields`: the progress
    bar's label -> log key."""
    from bert_tf.training import run

    f = flag_values
    if not f.do_train:
        status = restore_trained(trainer, f.init_checkpoint)
        if status.not_found:
            logging.warning("The task head is not in %s: its outputs are untrained", f.init_checkpoint)
        logging.info("Model %s", status)
        return status
    return _with_progress(
        trainer, f, fields,
        lambda progress: run.train_or_restore(
            trainer, train_data, True, f.init_checkpoint,
            lambda: run.write_run_files(f.output_dir, lora_settings(f, record), config, f.vocab_file), progress,
            on_start=lambda: logging.info("%s", trainer.parameters()),
        ),
    )


def log_results(results, title="Eval results"):
    logging.info("***** %s *****", title)
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])


# --- Hugging Face folders as --init_checkpoint ---


def require_unless_hf_folder(names):
    """`flags.mark_flag_as_required` for `names` (its check and message), but when --init_checkpoint
    is a Hugging Face folder: it holds what they name."""

    def given(value):  # the folder is looked at only when the flag is missing (the import loads TensorFlow)
        from bert_tf.checkpoints import hf

        return value is not None or hf.is_hf_folder(flags.FLAGS.init_checkpoint)

    for name in names:
        flags.register_validator(name, given, message=f"Flag --{name} must have a value other than None.")


def hf_folder_flags(f):
    """With --init_checkpoint a Hugging Face folder: sets --vocab_file and --do_lower_case (when
    the script has them) to the folder's and returns its BertConfig (`hf.folder_settings`); else None."""
    from bert_tf.checkpoints import hf

    if not hf.is_hf_folder(f.init_checkpoint):
        return None
    given = {name: f[name].value for name in ("vocab_file", "do_lower_case") if name in f and f[name].present}
    config = load_bert_config(f.bert_config_file) if f.bert_config_file else None
    found = library_call(
        lambda: hf.folder_settings(f.init_checkpoint, config, f.bert_config_file, "vocab_file" in f, **given), "--"
    )
    for name in {"vocab_file", "do_lower_case"} & set(f):
        setattr(f, name, getattr(found, name))
    return found.config


# --- LoRA ---


def define_lora_flags():
    flags.DEFINE_integer("lora_rank", 0, "LoRA: adapters of this rank on the encoder's attention and feed-forward "
                         "layers, the rest of the encoder frozen (0: off, every weight fine-tuned).")
    flags.DEFINE_float("lora_alpha", None, "LoRA: the adapters' scale is lora_alpha / lora_rank (default: lora_rank).")


def lora_settings(flag_values, record=None):
    """`{lora_rank, lora_alpha}` of the flags (alpha resolved; a bad value is a one-line error
    naming the flag), or `record` (a RunRecord) with them."""
    import dataclasses

    from bert_tf.training.settings import lora_settings as checked

    f = flag_values
    values = library_call(lambda: checked(f.lora_rank, f.lora_alpha), flag_names=("lora_rank", "lora_alpha"))
    return values if record is None else dataclasses.replace(record, **values)


# --- The fine-tuning search ---


def _number_flag(name, default, help_text, search):
    """A number flag, or with `search` a string of comma-separated numbers (`run_or_search` parses it)."""
    if not search:
        return (flags.DEFINE_integer if isinstance(default, int) else flags.DEFINE_float)(name, default, help_text)
    flags.DEFINE_string(name, f"{default:g}", f"{help_text} A comma-separated list makes a search (--restarts).")


def define_search_flags():
    flags.DEFINE_integer("restarts", 1, "Runs of each combination of --learning_rate, --train_batch_size and "
                         "--num_train_epochs, seeded --random_seed + 0, 1, ...; more than one run is a search.")


def run_or_search(f, run, evaluation="do_eval"):
    """`run()` with the flags' values; for a search (lists, --restarts>1: `bert_tf.training.search`)
    `run()` per run with the flags set to its values and subfolder, then --do_predict with the
    chosen run. `evaluation`: the flag whose action writes the dev figures. Training needs a process
    that can train (`check_weights_may_change`), checked before anything is read or written."""
    from bert_tf.training import search, settings

    if f.do_train:
        library_call(settings.check_weights_may_change)
    names = ("output_dir", "random_seed", "learning_rate", "train_batch_size", "num_train_epochs", "restarts")
    runs = library_call(lambda: search.grid(
        f.learning_rate, f.train_batch_size, f.num_train_epochs, f.restarts, f.random_seed), flag_names=names)

    def use(one, output_dir, **actions):
        for name, value in dict(output_dir=output_dir, random_seed=one.seed, learning_rate=one.learning_rate,
                                train_batch_size=one.train_batch_size, num_train_epochs=one.num_train_epochs,
                                **actions).items():
            setattr(f, name, value)
        run()

    if not search.is_search(runs):
        library_call(lambda: search.check_not_search_folder(f.output_dir), flag_names=names)
        return use(runs[0], f.output_dir)
    if not (f.do_train and f[evaluation].value):
        fail(f"a search (a list in --learning_rate, --train_batch_size or --num_train_epochs, or --restarts>1) "
             f"needs --do_train and --{evaluation}: it chooses its run by the dev figures")
    predict, each = f.do_predict and evaluation != "do_predict", {"do_predict": evaluation == "do_predict"}
    shared = search_settings(f)
    done = library_call(lambda: search.search(
        f.output_dir, runs, f.random_seed, lambda one, run_dir: use(one, run_dir, **each),
        lambda message: logging.info("***** Search: %s *****", message), shared), flag_names=names + tuple(shared))
    if predict:
        use(done.chosen.run, done.chosen.run_dir, do_train=False, do_eval=False, do_predict=True)


# The flags whose values every run of a search shares and that change what a run learns (the
# grid's own and those of speed or output aside); a script records those it has.
_SEARCH_PATHS = ("init_checkpoint", "bert_config_file", "vocab_file", "data_dir", "train_file", "predict_file",
                 "labels_file", "labels")
_SEARCH_SETTINGS = _SEARCH_PATHS + (
    "task_name", "tfds_name", "xnli_language", "do_lower_case", "max_seq_length", "warmup_proportion", "optimizer",
    "gradient_accumulation_steps", "mixed_precision", "lora_rank", "lora_alpha", "group_by_length", "doc_stride",
    "max_query_length", "version_2_with_negative", "feature_based", "lstm_units",
)


def search_settings(f):
    """`{flag name: value}` of the _SEARCH_SETTINGS the script has, as its runs will take them: the
    casing a Hugging Face folder given as --init_checkpoint has, paths (the model, its config and
    vocabulary, the data) made absolute, LoRA's alpha
    resolved, the task's name as its catalog keys it, lstm_units only for a feature-based model."""
    hf_folder_flags(f)
    values = {name: f[name].value for name in _SEARCH_SETTINGS if name in f}
    values.update(lora_settings(f))
    if values.get("task_name"):
        values["task_name"] = values["task_name"].strip().lower()
    for name in _SEARCH_PATHS:
        if values.get(name):
            values[name] = os.path.abspath(values[name])
    if values.get("feature_based") is None:
        values.pop("lstm_units", None)
    return values


# --- Dynamic padding, and XLA choices logged alike ---


def define_padding_flags(training=True):
    """--length_bucket, --pad_to_max_seq_length and, for a script that trains, --group_by_length."""
    flags.DEFINE_integer("length_bucket", None, "Each batch is cut to its longest sequence rounded up to a multiple "
                         "of this (default: 8 where the step is XLA-compiled, one program per shape; else 1, the "
                         "exact longest: more shapes cost nothing there). The outputs are those of fixed padding.")
    flags.DEFINE_bool("pad_to_max_seq_length", False, "Pad every batch to --max_seq_length, as the original (static "
                      "shapes; always so under --use_tpu).")
    if training:
        flags.DEFINE_bool("group_by_length", False, "Training batches of examples of similar length (less padding, "
                          "another batch order: a resumed run must keep it).")
        flags.DEFINE_bool("skip_padding", None, "The encoder's layers run all but attention's scores on a batch's real "
                          "tokens alone (the outputs on them are the same). Default: on CPU without XLA where batches "
                          "are cut; off with fixed shapes, XLA (not possible), on GPUs and for run_squad (its loss "
                          "reads the padding positions' logits).")


def padding_settings(flag_values):
    """`(length_bucket, group_by_length)`: the batches' bucket (None: fixed shapes, asked or on a TPU)
    and whether training batches are grouped by length. Unset, the bucket follows the XLA choice (logged):
    --jit_compile's, else Keras' (predict compiles on a GPU). A bad value: one line naming the flag."""
    from bert_tf.training import settings, speed

    f = flag_values
    if f.use_tpu and f["pad_to_max_seq_length"].present and not f.pad_to_max_seq_length:
        fail("--pad_to_max_seq_length=false is not possible with --use_tpu: TPUs need static shapes")
    fixed = f.pad_to_max_seq_length or f.use_tpu or ("distribution_strategy" in f and strategy_name(f) == "tpu")
    if fixed and f.length_bucket is not None:
        why = "--pad_to_max_seq_length" if f.pad_to_max_seq_length else "a TPU (static shapes)"
        fail(f"--length_bucket={f.length_bucket} has no use with {why}: every batch is padded to --max_seq_length")
    if f.length_bucket is not None and f.length_bucket > f.max_seq_length:
        fail(f"--length_bucket={f.length_bucket} is above --max_seq_length={f.max_seq_length}: no batch is longer; "
             "give at most that")
    auto = f.length_bucket is None and not fixed
    jit = auto and (library_call(lambda: speed.jit_compile_for(f.jit_compile), "--") if "jit_compile" in f
                    else speed.current_platform() == "gpu")
    grouped = "group_by_length" in f and f.group_by_length
    values = library_call(lambda: settings.padding_settings(f.length_bucket, fixed, grouped, jit), "--")
    if auto:
        logging.info("length_bucket=%d: the default %s XLA", values["length_bucket"], "with" if jit else "without")
    return values["length_bucket"], values["group_by_length"]


def log_jit_choice(flag, choice):
    """Logs an XLA setting resolved by bert_tf.training.speed (a JitChoice): its value and where it
    came from, after the warning of an unreadable speed file. Returns the value."""
    if choice.warning:
        logging.warning("%s", choice.warning)
    logging.info("%s=%s: %s", flag, choice.value, choice.source)
    return choice.value
