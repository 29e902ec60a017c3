"""Multiple choice (paper §4.4, SWAG) as a task of the one loop.

Each example's choices are scored together and compared by a softmax: a classification over the
choice indices, so the classification task's loss and metrics (the mean cross-entropy,
eval_accuracy, eval_loss) and its prediction outputs (the probabilities of the choices) apply as
they are. The inputs are built in graph per batch: the context and each choice's text are
tokenized (`BertTokenizer`) and packed as `[CLS] context [SEP] choice [SEP]` (`BertPackInputs`,
longest segment truncated first), one sequence per choice.
"""

import tensorflow as tf

from bert_tf.data.batching import array_dataset
from bert_tf.models import BertEncoder, BertMultipleChoice
from bert_tf.tasks.classifier.task import ClassifierTask


class SwagTask(ClassifierTask):
    """A BertMultipleChoice over `num_choices` choices; the labels are the choices' indices.

    `data` for `dataset`: a dict of numpy arrays, `context` (object `[n]`), `choices` (object
    `[n, num_choices]`, the text packed after the context) and `label` (int32 `[n]`, 0 for an
    unlabelled example), e.g. `bert_tf.tasks.swag.reader.encode_examples`.
    """

    def __init__(self, bert_config, num_choices=4, vocab_file=None, do_lower_case=True, max_seq_length=128,
                 dropout_rate=0.1):
        super().__init__(bert_config, [str(i) for i in range(num_choices)], "single", vocab_file, do_lower_case,
                         max_seq_length, pair=True, dropout_rate=dropout_rate)
        self.num_choices = num_choices

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)
        return BertMultipleChoice(encoder, num_choices=self.num_choices, dropout_rate=self.dropout_rate)

    def dataset(self, data, mode, batch_size, input_context=None, seed=None, skip_batches=0):
        if self.pack is None:
            raise ValueError("SwagTask needs a vocab_file to read text")
        tokenizer, packer, c = self.pack.tokenizer, self.pack.packer, self.num_choices

        def to_model(batch):
            context = tokenizer(batch["context"])  # [B, (pieces)]
            rows = tf.repeat(tf.range(tf.shape(batch["context"])[0]), c)  # [B * C]: b, b, b, b, b+1, ...
            choices = tokenizer(tf.reshape(batch["choices"], [-1]))  # [B * C, (pieces)]
            packed = packer([tf.gather(context, rows), choices])  # [B * C, S] each
            x = {k: tf.reshape(v, [-1, c, self.max_seq_length]) for k, v in packed.items()}  # [B, C, S]
            return x, {"label": batch["label"], "weight": batch["weight"]}

        ds = array_dataset(data, mode, batch_size, input_context, seed, skip_batches)
        return ds.map(to_model, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)
