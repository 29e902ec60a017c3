"""Classification examples -> tf.data batches of encoder inputs, built in graph (TensorFlow).

The text stays text until the batch is formed: each batch of `text_a` / `text_b` strings goes
through the in-graph tokenizer (`BertTokenizer`, FullTokenizer's ids) and `BertPackInputs`
(the original's `convert_single_example`: [CLS] A [SEP] B [SEP], longest segment truncated
first, segment ids, zero padding, input_mask). No TFRecord of features is written first, as
the original does: changing max_seq_length or the vocab needs no new files.

Evaluation and prediction see every example once: the examples are padded up to a whole
number of global batches with rows of weight 0 (the original's `PaddingInputExample` and
`is_real_example`), which metrics skip and predictions drop, so no remainder is lost on any
number of replicas. Each batch is then cut to its longest sequence rounded up to a bucket
(`bert_tf.data.lengths.cut_padding`) unless the task keeps max_seq_length.
"""

import numpy as np
import tensorflow as tf

from bert_tf.data.batching import array_dataset, carried
from bert_tf.data.lengths import cut_padding
from bert_tf.models.bert_encoder import INPUT_NAMES
from bert_tf.preprocessing.text_windows import WINDOW_COUNT, WINDOW_CUT, WINDOW_TEXT, WindowPacker

# Examples tokenized per batch when their lengths are measured (`packed_lengths`).
_LENGTH_BATCH = 1024

LABEL_KINDS = ("single", "regression", "multi")


def encode_examples(examples, labels, label_kind, source="examples"):
    """InputExamples -> dict of numpy arrays: `text_a`, `text_b` (object; "" when absent) and
    `label`: int32 ids into `labels` ("single"), float32 scores ("regression") or float32
    multi-hot `[n, len(labels)]` ("multi"). An example without a label (a test row) gets 0s.

    A label outside `labels` (or a score that is no number) is a ValueError naming the
    example's guid and `source`.
    """
    if label_kind not in LABEL_KINDS:
        raise ValueError(f"label_kind {label_kind!r} is not one of {', '.join(LABEL_KINDS)}")
    index = {name: i for i, name in enumerate(labels)}

    def bad(example, what):
        return ValueError(f"{source}: example {example.guid!r} has {what}; the task's labels are {list(labels)}")

    def label_of(example):
        label = example.label
        if label_kind == "regression":
            try:
                return 0.0 if label is None else float(label)
            except (TypeError, ValueError):
                raise bad(example, f"label {label!r}, which is not a number") from None
        if label_kind == "multi":
            row = np.zeros(len(labels), np.float32)
            for name in label or ():
                if name not in index:
                    raise bad(example, f"label {name!r}")
                row[index[name]] = 1.0
            return row
        if label is None:
            return 0
        if label not in index:
            raise bad(example, f"label {label!r}")
        return index[label]

    label_values = [label_of(e) for e in examples]
    dtype = np.int32 if label_kind == "single" else np.float32
    shape = (len(examples), len(labels)) if label_kind == "multi" else (len(examples),)
    return {
        "text_a": np.array([e.text_a or "" for e in examples], dtype=object),
        "text_b": np.array([e.text_b or "" for e in examples], dtype=object),
        "label": np.array(label_values, dtype=dtype).reshape(shape),
    }


def classifier_dataset(features, pack, batch_size, mode, input_context=None, seed=None, skip_batches=0,
                       length_bucket=None, lengths=None):
    """Batches `(x, y)`: x the encoder inputs (int32 `[batch_size, seq]`) that
    `pack(text_a, text_b)` builds from a batch of strings, y `{"label", "weight"}`.

    features: `encode_examples`' dict; batch_size per replica; `mode`, `seed`, `skip_batches`
    and `lengths` (training batches grouped by length) as `array_dataset` (train: shuffled,
    repeated, resumable; eval/predict: every example once, in order, padded with weight-0 rows).
    Tokenization happens after the skip, so a resumed run skips cheaply. length_bucket: seq is
    the batch's longest row rounded up to a multiple of it (None: max_seq_length).
    """

    def to_model(batch):
        x = cut_padding(pack(batch["text_a"], batch["text_b"]), length_bucket, INPUT_NAMES)
        return x, {"label": batch["label"], "weight": batch["weight"], **carried(batch)}

    ds = array_dataset(features, mode, batch_size, input_context, seed, skip_batches, lengths)
    return ds.map(to_model, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)


def packed_lengths(features, pack, keys=("text_a", "text_b")):
    """int32 `[n]`: how many tokens (padding excluded) `pack(*features[k] for k in keys)` gives
    each row of `features`; `pack` may return `input_mask` of any rank (SWAG: `[batch, choices,
    seq]`, a row's longest choice counts), or the windows of each row (`WindowPacker`: a row's
    windows' tokens add up). Tokenizes every row once, in batches."""
    ds = tf.data.Dataset.from_tensor_slices({k: features[k] for k in keys}).batch(_LENGTH_BATCH)

    def length(batch):
        packed = pack(*(batch[k] for k in keys))
        mask = tf.cast(packed["input_mask"], tf.int32)
        if WINDOW_TEXT in packed:
            count = packed[WINDOW_COUNT]
            return tf.math.unsorted_segment_sum(tf.reduce_sum(mask, -1), packed[WINDOW_TEXT], tf.size(count))
        return tf.reduce_max(tf.reshape(tf.reduce_sum(mask, -1), [tf.shape(mask)[0], -1]), -1)

    lengths = [b.numpy() for b in ds.map(length, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)]
    return np.concatenate(lengths).astype(np.int32)


def window_counts(features, pack, keys=("text_a", "text_b")):
    """`(windows, cut)`, int32 `[n]` each: the windows `pack` (a `WindowPacker`) cuts each row of
    `features` into, and 1 where the row's text goes past its last window. Tokenizes every row
    once, in batches."""
    ds = tf.data.Dataset.from_tensor_slices({k: features[k] for k in keys}).batch(_LENGTH_BATCH)

    def counts(batch):
        packed = pack(*(batch[k] for k in keys))
        return packed[WINDOW_COUNT], packed[WINDOW_CUT]

    out = list(ds.map(counts, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).as_numpy_iterator())
    if not out:
        return np.zeros([0], np.int32), np.zeros([0], np.int32)
    return tuple(np.concatenate([o[i] for o in out]).astype(np.int32) for i in range(2))


class TextPacker:
    """`(text_a, text_b)` string batches -> encoder inputs, as `convert_single_example` (or, with
    `windows`, a `WindowPacker`'s windows of each text).

    tokenizer: a `bert_tf.preprocessing.BertTokenizer`; packer: a `BertPackInputs`;
    pair: whether text_b is packed (single-sentence tasks pack A alone); windows: None, or
    `(max_windows, stride)` to pack the windows of texts longer than the packer's length.
    """

    def __init__(self, tokenizer, packer, pair, windows=None):
        self.tokenizer, self.packer, self.pair = tokenizer, packer, pair
        self.windows = WindowPacker(tokenizer, packer, pair, *windows) if windows else None
        self._function = None

    def __call__(self, text_a, text_b):
        if self.windows is not None:
            return self.windows(text_a, text_b)
        segments = [self.tokenizer(text_a)]
        if self.pair:
            segments.append(self.tokenizer(text_b))
        return self.packer(segments)

    def traced(self, text_a, text_b=None):
        """As calling the packer, through one tf.function over string batches of any size that
        is traced once: the datasets of a run (train, eval, predict, lengths) each call it rather
        than tracing the tokenizer into their own map function again."""
        if self._function is None:
            spec = tf.TensorSpec([None], tf.string)
            if self.pair:
                self._function = tf.function(self.__call__, input_signature=[spec, spec], autograph=False)
            else:
                self._function = tf.function(lambda text_a: self(text_a, None), input_signature=[spec],
                                             autograph=False)
        return self._function(text_a, text_b) if self.pair else self._function(text_a)


def __getattr__(name):
    """Names this module held before, as deprecated aliases (see `bert_tf/_deprecated.py`)."""
    from bert_tf._deprecated import moved

    return moved(__name__, name)
