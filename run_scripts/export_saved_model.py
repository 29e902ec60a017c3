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
file in it; or a fine-tuned Hugging Face folder: its class, id2label, config.json, vocab.txt);
--bert_config_file and --vocab_file override them, --seq_length (default: the run's
max_seq_length) sets the longest packing: the text-in signatures (and the preprocessor's default
call) pad a request to its longest sequence rounded up to --length_bucket (default: 8 when the
serving function is XLA-compiled, one program per shape; else 1, the request's exact longest), or
always to --seq_length with --pad_to_max_seq_length; a batch with padding skips it in all but
attention's scores (--skip_padding, on by default without XLA). --quantize=int8 stores the Dense kernels as int8;
--serving_jit_compile XLA-compiles the model part of the serving function; unset, it is on with int8
and, for float weights, this machine's measured choice (`python bench/serving.py --save_defaults`,
bert_tf.training.speed; off without one, on for a GPU), logged with where it came from.
--mixed_precision=bf16 serves bfloat16 weights and products (float32 LayerNorms, softmax and
outputs). A process serving a float export runs one text faster with the environment variable
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 (bert_tf.export.common.model_runner says when it is safe). The
export is written under a temporary name and renamed when complete; an existing --export_dir is
replaced only with --overwrite (an empty one without it), keeping its permissions and group.
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.export.saved_model import Settings
from run_scripts import settings_flags
from run_scripts.flag_settings import at_the_edge

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help


def main(argv):
    del argv
    from bert_tf.export.saved_model import export_saved_model

    at_the_edge(lambda: export_saved_model(settings_flags.settings_from_flags(Settings)))


if __name__ == "__main__":
    app.run(main)
