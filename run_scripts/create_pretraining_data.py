"""Create masked-LM / next-sentence TFRecords for BERT pre-training (the original's flags).

    python run_scripts/create_pretraining_data.py \
      --input_file=corpus/*.txt --output_file=out/train-0.tfrecord,out/train-1.tfrecord \
      --vocab_file=vocab.txt --do_lower_case=True --max_seq_length=128 \
      --max_predictions_per_seq=20 --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5 \
      --num_workers=2

Input: one sentence per line, blank lines between documents. Output: the original's features
(input_ids, input_mask, segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights,
next_sentence_labels), so files cross between this and the original release both ways.
The paper's ablations: --mask_token_prob/--random_token_prob (Table 8), --next_sentence=false
(single segments of contiguous text, for a masked LM without next-sentence prediction).

Beyond the original: --num_workers processes, memory bounded by --shard_size_mb rather than by
the corpus (whatever the text: a document or line longer than twice the shard size is cut),
output files written under temporary names and renamed when all are complete, and a run that
is stopped resumes where it was when started again with the same command (the work folder of a
stopped run with other inputs or flags is removed). Bad paths are errors before any work.

--runner=beam runs the same shards as an Apache Beam pipeline (pip install -e ".[beam]") on the
runner that --beam_pipeline_options names, for a corpus that outgrows one machine; the files are
byte-identical to the local run's (docs/scale.md):

    python run_scripts/create_pretraining_data.py ... --runner=beam \
      --beam_pipeline_options="--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing"
"""

from absl import app, flags

import run_scripts  # noqa: F401 - first: TensorFlow loads without its start-up log lines
from bert_tf.data.pretraining.create import Settings
from run_scripts import settings_flags
from run_scripts.flag_settings import at_the_edge

FLAGS = flags.FLAGS

settings_flags.define_flags(Settings)  # the flags are the settings' fields: names, types, defaults and help
flags.register_validator("num_workers", lambda n: n >= 1, message="--num_workers must be at least 1")
flags.register_validator("shard_size_mb", lambda mb: mb > 0, message="--shard_size_mb must be positive")


def main(argv):
    del argv
    from bert_tf.data.pretraining.create import create_pretraining_data

    at_the_edge(lambda: create_pretraining_data(settings_flags.settings_from_flags(Settings)))


if __name__ == "__main__":
    app.run(main)
