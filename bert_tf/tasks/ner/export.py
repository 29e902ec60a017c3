"""A run_ner model (the fine-tuned BertTokenClassifier, or the feature-based BertFeatureTagger:
the same inputs and logits) as a SavedModel that tags the words of sentences given as text.

    model = tf.saved_model.load(path)  # tensorflow_text imported first, for its ops
    out = model.signatures["serving_default"](text=tf.constant(["John lives in Berlin ."]))

In the graph, as run_ner.py reads a sentence (`bert_tf.tasks.ner.inputs`): the words are the text
split at ASCII whitespace (CoNLL's words, one space between them); each word is WordPiece-tokenized
on its own ([UNK] when nothing is left of it), its tag read on its first piece; a sentence longer
than `seq_length - 2` pieces is cut into windows that tag every word once, each after the first
repeating up to `window_context_words` preceding words as context; the model runs on the longest
window rounded up to the export's length bucket (`ServingOptions`). Outputs (`W`: the longest
sentence's words): `words` string `[batch, W]`, `label` string `[batch, W]` (each word's tag),
`label_id` int32 `[batch, W]`, `probabilities` float32 `[batch, W, tags]`, `num_words` int32
`[batch]`; positions past a sentence's words hold "", -1 and 0.
"""

import tensorflow as tf

from bert_tf.export.common import (
    DEFAULT_SERVING,
    SavedModelRoot,
    as_float32,
    string_spec,
    write_text_in_export,
)


def _search(sorted_values, values, side):
    return tf.searchsorted(sorted_values, values, side=side, out_type=tf.int64)


def word_windows(counts, row_splits, capacity, context_words):
    """`ner_inputs.windows` for every sentence of a batch at once.

    counts: int64 `[W]`, each word's pieces (1 to capacity), the sentences' words one after the
    other; row_splits: int64 `[B + 1]`, sentence b holding words [row_splits[b], row_splits[b+1]).
    Returns int64 `(left, start, end)`, `[N]` each: window n holds words [left, end) and tags
    [start, end) (indices into the W words).

    Every rule of `windows` bounds a prefix sum of the piece counts, which grows strictly
    (counts >= 1), so each window's bounds are two binary searches; a loop step makes the next
    window of every unfinished sentence.
    """
    prefix = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(counts)], axis=0)  # [W + 1]: pieces before word w
    firsts, lasts = row_splits[:-1], row_splits[1:]  # [B]
    last_word = tf.size(counts, out_type=tf.int64) - 1

    def step(start, lefts, starts, ends):
        active = start < lasts  # [B]
        own = tf.gather(counts, tf.minimum(start, last_word))  # [B] (clipped for finished rows)
        before = tf.gather(prefix, start)  # [B]
        # The context: the most words before `start`, within the sentence and context_words, of
        # at most capacity // 2 pieces that leave room for word `start`.
        room = tf.minimum(capacity - own, capacity // 2)
        left = tf.maximum(_search(prefix, before - room, "left"), tf.maximum(firsts, start - context_words))
        # Then as many words as fit.
        end = tf.minimum(_search(prefix, tf.gather(prefix, left) + capacity, "right") - 1, lasts)
        index = lefts.size()
        return (
            tf.where(active, end, start),
            lefts.write(index, tf.boolean_mask(left, active)),
            starts.write(index, tf.boolean_mask(start, active)),
            ends.write(index, tf.boolean_mask(end, active)),
        )

    arrays = [
        tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False, element_shape=[None]) for _ in range(3)
    ]
    _, *arrays = tf.while_loop(
        lambda start, *_: tf.reduce_any(start < lasts), step, [firsts, *arrays], parallel_iterations=1
    )
    return tuple(a.concat() for a in arrays)


def tag_words(run_model, tokenizer, packer, text, context_words):
    """Per-word float32 logits `[batch, (words), tags]` and the words `[batch, (words)]` of
    `text` (string `[batch]`), read as `ner_inputs.encode_sentences` reads sentences; `run_model`
    (`model_runner`) gives the model's logits on the packed windows."""
    capacity = packer.seq_length - 2  # [CLS] pieces [SEP]
    words = tf.strings.split(text)  # [B, (W)]
    pieces = tokenizer(words.flat_values)  # [W, (P)], each word alone
    # A word without pieces is one [UNK], so that every word has a first piece to tag.
    unk = tokenizer.vocabulary.index("[UNK]")
    empty = tf.cast(tf.equal(pieces.row_lengths(), 0), tf.int64)  # [W]
    fill = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(empty)], unk), empty)
    pieces = tf.concat([pieces, fill], axis=1)[:, :capacity]  # [W, (1..capacity)]
    counts = pieces.row_lengths()
    left, start, end = word_windows(counts, words.row_splits, capacity, context_words)  # [N] each
    held = tf.ragged.range(left, end)  # [N, (words)]
    window_ids = tf.RaggedTensor.from_row_splits(tf.gather(pieces, held.flat_values), held.row_splits)
    logits = as_float32(run_model(packer(window_ids.merge_dims(1, 2))))  # [N, L, tags], L <= S
    # Each tagged word's first piece: 1 ([CLS]) + the pieces before it in its window.
    tagged = tf.ragged.range(start, end)  # [N, (tagged)]
    word, window = tagged.flat_values, tagged.value_rowids()  # [W] each, every word once
    prefix = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(counts)], axis=0)
    position = 1 + tf.gather(prefix, word) - tf.gather(prefix, tf.gather(left, window))
    per_word = tf.gather_nd(logits, tf.stack([window, position], axis=1))  # [W, tags], window order
    per_word = tf.gather(per_word, tf.math.invert_permutation(word))  # [W, tags], word order
    return tf.RaggedTensor.from_row_splits(per_word, words.row_splits), words


class TokenClassifierSavedModel(SavedModelRoot):
    """Root object of a token-classifier export: `__call__(text)` = the serving signature."""

    def __init__(self, model, tokenizer, packer, run_model, labels, window_context_words):
        super().__init__(model)
        names = tf.constant(list(labels))

        def serve(text):
            logits, words = tag_words(run_model, tokenizer, packer, text, window_context_words)
            probabilities = tf.nn.softmax(logits.flat_values)  # [W, tags]
            label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)  # [W]
            per_sentence = lambda values: tf.RaggedTensor.from_row_splits(values, words.row_splits)  # noqa: E731
            return {
                "words": words.to_tensor(""),
                "label": per_sentence(tf.gather(names, label_id)).to_tensor(""),
                "label_id": per_sentence(label_id).to_tensor(-1),
                "probabilities": per_sentence(probabilities).to_tensor(0.0),
                "num_words": tf.cast(words.row_lengths(), tf.int32),
            }

        self.__call__ = tf.function(serve, input_signature=[string_spec("text")], autograph=False)

def export_ner(model, labels, vocab_file, do_lower_case, seq_length, export_dir,
               window_context_words=16, task=None, overwrite=False, serving=DEFAULT_SERVING):
    """Writes a `BertTokenClassifier` or `BertFeatureTagger` to `export_dir` with a
    `serving_default` taking sentences as text (see the module's docstring). labels: the tags,
    in the model's order; serving: how the model runs (`ServingOptions`). Returns `export_dir`."""
    if model.num_classes != len(labels):
        raise ValueError(f"the model has {model.num_classes} outputs, but there are {len(labels)} tags {list(labels)}")

    def make_root(model, tokenizer, packer, run_model):
        if "[UNK]" not in tokenizer.vocabulary:
            raise ValueError(f"vocab {vocab_file!r} has no [UNK]")
        return TokenClassifierSavedModel(model, tokenizer, packer, run_model, labels, window_context_words)

    return write_text_in_export(
        model, make_root, vocab_file, do_lower_case, seq_length, export_dir, task, overwrite, serving
    )


def export_run(model, record, vocab_file, seq_length, export_dir, overwrite=False, serving=DEFAULT_SERVING):
    """The export of a run_ner run: its `RunRecord` gives the tags, windows and casing."""
    return export_ner(
        model, record.labels, vocab_file, record.do_lower_case, seq_length, export_dir,
        window_context_words=record.window_context_words, task=record.to_dict(), overwrite=overwrite,
        serving=serving,
    )
