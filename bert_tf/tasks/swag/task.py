"""Multiple choice (paper §4.4, SWAG) as a task of the one loop.

Each example's choices are scored together and compared by a softmax: a classification over the
choice indices, so the classification task's loss and metrics (the mean cross-entropy,
eval_accuracy, eval_loss) and its prediction outputs (the probabilities of the choices) apply as
they are. The inputs are built in graph per batch: the context and each choice's text are
tokenized (`BertTokenizer`) and packed as `[CLS] context [SEP] choice [SEP]` (`BertPackInputs`,
longest segment truncated first), one sequence per choice, and the batch `[batch, choices, seq]`
cut to its longest sequence over all choices (`length_bucket`).
"""

import functools

import tensorflow as tf

from bert_tf.data.batching import array_dataset, carried
from bert_tf.data.lengths import cut_padding
from bert_tf.errors import shown
from bert_tf.models import INPUT_NAMES, BertEncoder, BertMultipleChoice
from bert_tf.tasks.classifier.inputs import packed_lengths
from bert_tf.tasks.classifier.task import ClassifierTask


class SwagTask(ClassifierTask):
    """A BertMultipleChoice over `num_choices` choices; the labels are the choices' indices.

    `data` for `dataset`: a dict of numpy arrays, `context` (object `[n]`), `choices` (object
    `[n, num_choices]`, the text packed after the context) and `label` (int32 `[n]`, 0 for an
    unlabelled example), e.g. `bert_tf.tasks.swag.reader.encode_examples`.
    """

    def __init__(self, bert_config, num_choices=4, vocab_file=None, do_lower_case=True, max_seq_length=128,
                 dropout_rate=0.1, length_bucket=None, group_by_length=False):
        super().__init__(bert_config, [str(i) for i in range(num_choices)], "single", vocab_file, do_lower_case,
                         max_seq_length, pair=True, dropout_rate=dropout_rate, length_bucket=length_bucket,
                         group_by_length=group_by_length)
        self.num_choices = num_choices

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)
        return BertMultipleChoice(encoder, num_choices=self.num_choices, dropout_rate=self.dropout_rate)

    def pack_choices(self, context, choices):
        """Encoder inputs, int32 `[B, C, max_seq_length]` each, of `context` (strings `[B]`) with
        each of its `choices` (strings `[B, C]`)."""
        tokenizer, packer, c = self.pack.tokenizer, self.pack.packer, self.num_choices
        pieces = tokenizer(context)  # [B, (pieces)]
        rows = tf.repeat(tf.range(tf.shape(context)[0]), c)  # [B * C]: b, b, b, b, b+1, ...
        endings = tokenizer(tf.reshape(choices, [-1]))  # [B * C, (pieces)]
        packed = packer([tf.gather(pieces, rows), endings])  # [B * C, S] each
        return {k: tf.reshape(v, [-1, c, self.max_seq_length]) for k, v in packed.items()}  # [B, C, S]

    @functools.cached_property
    def _traced_pack_choices(self):
        """`pack_choices` traced once for batches of any size, shared by the run's datasets (as
        `TextPacker.traced`)."""
        spec = [tf.TensorSpec([None], tf.string), tf.TensorSpec([None, self.num_choices], tf.string)]
        return tf.function(self.pack_choices, input_signature=spec, autograph=False)

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        if self.pack is None:
            raise ValueError(f"SwagTask needs a {shown.vocab_file} to read text")
        pack = self._traced_pack_choices

        def to_model(batch):
            x = cut_padding(pack(batch["context"], batch["choices"]), self.length_bucket, INPUT_NAMES)
            return x, {"label": batch["label"], "weight": batch["weight"], **carried(batch)}

        grouped = mode == "train" and self.group_by_length
        lengths = packed_lengths(data, pack, ("context", "choices")) if grouped else None
        ds = array_dataset(data, mode, batch_size, input_context, seed, skip_batches, lengths)
        return ds.map(to_model, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)
