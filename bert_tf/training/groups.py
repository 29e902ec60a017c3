"""The settings groups every training run draws on, each defined once: where the model starts
(`Sources`), the original release's run flags (`RunSettings`), evaluation, TPUs, what this package
adds to training, LoRA, the search and the batches' padding. A task's settings class
(`bert_tf.tasks.settings.FineTuningSettings`) is made of them, and the scripts that are not
fine-tuning define their flags from them (`run_scripts/settings_flags.py`), so that a flag they
share cannot differ.
"""

from bert_tf.fields import RUN, SEARCH, Settings, setting, settings_class
from bert_tf.training.distribution import STRATEGIES

__all__ = ["Evaluation", "Lora", "Padding", "RunSettings", "Search", "Sources", "Tpu", "Training"]

@settings_class
class Sources(Settings):
    """Where the model starts from: its checkpoint, config, vocabulary and casing."""

    init_checkpoint: str = setting(None, "Initial checkpoint (usually from a pre-trained BERT model).", kind=str,
                                   shared=SEARCH, path=True, order=0)
    bert_config_file: str = setting(None, "The config json file corresponding to the pre-trained BERT model.",
                                    kind=str, shared=SEARCH, path=True, order=1, required="unless_folder",
                                    compared_by_content=True)
    vocab_file: str = setting(None, "The vocabulary file that the BERT model was trained on.", kind=str,
                              shared=SEARCH, path=True, order=2, required="unless_folder", compared_by_content=True)
    do_lower_case: bool = setting(True, "Whether to lower case the input text (True for uncased models).",
                                  shared=SEARCH, order=10)


@settings_class
class RunSettings(Settings):
    """The flags of the original release's training scripts (run_classifier's)."""

    output_dir: str = setting(None, "The output directory where the model checkpoints will be written.", kind=str,
                              required=True)
    max_seq_length: int = setting(128, "The maximum total input sequence length after WordPiece tokenization.",
                                  shared=SEARCH, order=11)
    do_train: bool = setting(False, "Whether to run training.")
    do_predict: bool = setting(False, "Whether to run the model in inference mode on the test set.")
    train_batch_size: int = setting(32, "Total batch size for training.", many=True, shared=RUN)
    predict_batch_size: int = setting(8, "Total batch size for predict.")
    learning_rate: float = setting(5e-5, "The initial learning rate for Adam.", many=True, shared=RUN)
    num_train_epochs: float = setting(3.0, "Total number of training epochs to perform.", many=True)
    warmup_proportion: float = setting(0.1, "Proportion of training to perform linear learning rate warmup for.",
                                       shared=SEARCH, order=12)
    save_checkpoints_steps: int = setting(1000, "How often to save the model checkpoint.")
    iterations_per_loop: int = setting(1000, "How many steps to make in each estimator call.")


@settings_class
class Evaluation(Settings):
    """Evaluation on the dev set (every task but SQuAD, which evaluates by predicting)."""

    do_eval: bool = setting(False, "Whether to run eval on the dev set.")
    eval_batch_size: int = setting(8, "Total batch size for eval.")


@settings_class
class Tpu(Settings):
    """The original's TPU flags."""

    use_tpu: bool = setting(False, "Whether to use TPU or GPU/CPU.")
    tpu_name: str = setting(None, "The Cloud TPU to use: its name or a grpc://ip.address.of.tpu:8470 url.", kind=str)
    tpu_zone: str = setting(None, "[Optional] GCE zone of the Cloud TPU.", kind=str)
    gcp_project: str = setting(None, "[Optional] Project name of the Cloud TPU.", kind=str)
    master: str = setting(None, "[Optional] TensorFlow master URL (the TPU's address).", kind=str)
    num_tpu_cores: int = setting(8, "Only used if `use_tpu` is True. Total number of TPU cores to use.")


@settings_class
class Training(Settings):
    """What this package adds to the original's training flags."""

    distribution_strategy: str = setting(
        None, "Default: tpu with --use_tpu, mirrored with >1 GPU or --num_cpu_devices>1, else one_device.", kind=str,
        choices=STRATEGIES)
    num_gpus: int = setting(0, "GPUs for the mirrored strategy (0: all visible, or the CPU devices).")
    num_cpu_devices: int = setting(0, "Split the host CPU into this many logical devices (to try distribution).")
    optimizer: str = setting("adamw", "adamw: the original's; lamb: for large batches.", choices=("adamw", "lamb"),
                             shared=SEARCH, order=13)
    mixed_precision: str = setting("none", "Compute dtype policy.", choices=("none", "bf16", "fp16"), shared=SEARCH,
                                   order=15)
    jit_compile: bool = setting(None, "Compile the training step with XLA (default: on GPU/TPU; on CPU this "
                                "machine's measured choice, saved by `python bench/finetuning.py --save_defaults`, "
                                "else off).", kind=bool)
    gradient_accumulation_steps: int = setting(1, "Micro-batches per step (train_batch_size is the total).",
                                               shared=SEARCH, order=14)
    steps_per_execution: int = setting(None, "Steps per call (default 1; iterations_per_loop on TPU).", kind=int)
    random_seed: int = setting(12345, "Seed of initialisation, dropout and data order (exact resume).", shared=RUN)
    keep_checkpoints: int = setting(5, "How many recent checkpoints to keep.")
    progress: bool = setting(True, "Show a progress bar with examples/s.")


@settings_class
class Lora(Settings):
    """LoRA's adapters."""

    lora_rank: int = setting(0, "LoRA: adapters of this rank on the encoder's attention and feed-forward layers, the "
                             "rest of the encoder frozen (0: off, every weight fine-tuned).", shared=SEARCH, order=16)
    lora_alpha: float = setting(None, "LoRA: the adapters' scale is lora_alpha / lora_rank (default: lora_rank).",
                                kind=float, shared=SEARCH, order=17)


@settings_class
class Search(Settings):
    """The search's own setting (its grid is the lists of the run's `many` fields)."""

    restarts: int = setting(1, "Runs of each combination of --learning_rate, --train_batch_size and "
                            "--num_train_epochs, seeded --random_seed + 0, 1, ...; more than one run is a search.")


@settings_class
class Padding(Settings):
    """The batches' lengths and padding."""

    length_bucket: int = setting(None, "Each batch is cut to its longest sequence rounded up to a multiple of this "
                                 "(default: 8 where the step is XLA-compiled, one program per shape; else 1, the exact "
                                 "longest: more shapes cost nothing there). The outputs are those of fixed padding.",
                                 kind=int)
    pad_to_max_seq_length: bool = setting(False, "Pad every batch to --max_seq_length, as the original (static "
                                          "shapes; always so under --use_tpu).")
    group_by_length: bool = setting(False, "Training batches of examples of similar length (less padding, another "
                                    "batch order: a resumed run must keep it).", shared=SEARCH, order=18)
    skip_padding: bool = setting(None, "The encoder's layers run all but attention's scores on a batch's real tokens "
                                 "alone (the outputs on them are the same). Default: on CPU without XLA where batches "
                                 "are cut; off with fixed shapes, XLA (not possible), on GPUs and for run_squad (its "
                                 "loss reads the padding positions' logits).", kind=bool)
