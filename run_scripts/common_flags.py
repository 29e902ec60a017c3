"""The flags that several scripts share, defined once (names, defaults and help of the original
release, then ours). What the flags become (settings, checks, error lines) is in
`run_scripts/flag_settings.py`; the fine-tuning driver in `run_scripts/fine_tuning.py`."""

from absl import flags


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


def require_unless_hf_folder(names):
    """`flags.mark_flag_as_required` for `names` (its check and message), but when --init_checkpoint
    is a Hugging Face folder or a sentence-transformers folder (it holds what they name), or has
    the file a flag names beside it (`flag_settings.hf_folder_flags`: a run's folder, Google's)."""

    def given(value, name):  # the folder is looked at only when the flag is missing (the import loads TensorFlow)
        from bert_tf.checkpoints import hf, sentence_transformers, sources

        folder = flags.FLAGS.init_checkpoint
        return value is not None or hf.is_hf_folder(folder) or sentence_transformers.is_sentence_transformers_folder(
            folder) or bool(folder and sources.beside(folder, sources.FILES_BESIDE[name]))

    for name in names:
        flags.register_validator(name, lambda value, name=name: given(value, name),
                                 message=f"Flag --{name} must have a value other than None.")


def define_lora_flags():
    flags.DEFINE_integer("lora_rank", 0, "LoRA: adapters of this rank on the encoder's attention and feed-forward "
                         "layers, the rest of the encoder frozen (0: off, every weight fine-tuned).")
    flags.DEFINE_float("lora_alpha", None, "LoRA: the adapters' scale is lora_alpha / lora_rank (default: lora_rank).")


def _number_flag(name, default, help_text, search):
    """A number flag, or with `search` a string of comma-separated numbers (`run_or_search` parses it)."""
    if not search:
        return (flags.DEFINE_integer if isinstance(default, int) else flags.DEFINE_float)(name, default, help_text)
    flags.DEFINE_string(name, f"{default:g}", f"{help_text} A comma-separated list makes a search (--restarts).")


def define_search_flags():
    flags.DEFINE_integer("restarts", 1, "Runs of each combination of --learning_rate, --train_batch_size and "
                         "--num_train_epochs, seeded --random_seed + 0, 1, ...; more than one run is a search.")


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

# Names this module held before the split by role, as aliases of their new homes (resolved when used).
_MOVED = {
    "fail": "flag_settings.fail", "library_call": "flag_settings.library_call", "as_flags": "flag_settings.as_flags",
    "load_bert_config": "flag_settings.load_bert_config", "strategy_name": "flag_settings.strategy_name",
    "create_strategy": "flag_settings.strategy_from_flags", "settings_or_fail": "flag_settings.settings_or_fail",
    "steps_per_execution": "flag_settings.steps_per_execution", "tpu_strategy": "flag_settings.tpu_strategy",
    "train": "flag_settings.train_with_progress", "restore_trained": "flag_settings.restore_from_flags",
    "log_results": "flag_settings.log_results", "hf_folder_flags": "flag_settings.hf_folder_flags",
    "lora_settings": "flag_settings.lora_from_flags", "padding_settings": "flag_settings.padding_from_flags",
    "log_jit_choice": "flag_settings.log_jit_choice", "check_output_dir_flag": "flag_settings.output_dir_from_flag",
    "check_trained_model": "flag_settings.check_trained_model",
    "check_batch_sizes": "flag_settings.batch_sizes_from_flags",
    "check_fine_tuning_flags": "fine_tuning.check_fine_tuning_flags",
    "check_run_output_dir": "fine_tuning.check_run_output_dir",
    "fine_tuning_settings": "fine_tuning.fine_tuning_settings",
    "train_or_restore": "fine_tuning.train_or_restore_from_flags", "run_or_search": "fine_tuning.run_or_search",
    "search_settings": "fine_tuning.search_settings",
}


def __getattr__(name):
    """An old name, with a DeprecationWarning saying where it went."""
    import importlib
    import warnings

    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _MOVED[name].partition(".")
    warnings.warn(f"run_scripts.common_flags.{name} moved to run_scripts.{_MOVED[name]}; import it from there",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(f"run_scripts.{module}"), attribute)
