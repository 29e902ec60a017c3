"""The original release's SQuAD pre-processing (google-research/bert run_squad.py:
read_squad_examples, convert_examples_to_features with _improve_answer_span and
_check_is_max_context, FeatureWriter), restated step for step, written independently of
bert_tf.tasks.squad and slow as the original is: json.load of the whole file, the paragraph's
words tokenized again for each question, a scan of all spans per token for max context, one
`tf.train.Example` object per feature. The tests check ours against it; bench/squad_features.py
times it.

Examples and features are namedtuples with the original's field names in its order (so they
also compare equal to plain tuples of the same values).
"""

import collections
import json
import os

import tensorflow as tf

OriginalExample = collections.namedtuple(
    "OriginalExample",
    ["qas_id", "question_text", "doc_tokens", "orig_answer_text", "start_position", "end_position", "is_impossible"],
)
OriginalFeature = collections.namedtuple(
    "OriginalFeature",
    ["unique_id", "example_index", "doc_span_index", "tokens", "token_to_orig_map", "token_is_max_context",
     "input_ids", "input_mask", "segment_ids", "start_position", "end_position", "is_impossible"],
)


def _is_whitespace(c):
    return c == " " or c == "\t" or c == "\r" or c == "\n" or ord(c) == 0x202F


def original_examples(input_file, is_training, version_2_with_negative):
    """read_squad_examples: the OriginalExamples of a SQuAD json file, as a list. Training
    questions whose answer text is not in the words it covers are skipped (the original logs
    "Could not find answer")."""
    with tf.io.gfile.GFile(os.fspath(input_file), "r") as reader:
        input_data = json.load(reader)["data"]
    examples = []
    for entry in input_data:
        for paragraph in entry["paragraphs"]:
            doc_tokens, char_to_word_offset, prev_is_whitespace = [], [], True
            for c in paragraph["context"]:
                if _is_whitespace(c):
                    prev_is_whitespace = True
                else:
                    if prev_is_whitespace:
                        doc_tokens.append(c)
                    else:
                        doc_tokens[-1] += c
                    prev_is_whitespace = False
                char_to_word_offset.append(len(doc_tokens) - 1)
            for qa in paragraph["qas"]:
                start_position = end_position = orig_answer_text = None
                is_impossible = False
                if is_training:
                    if version_2_with_negative:
                        is_impossible = qa["is_impossible"]
                    if len(qa["answers"]) != 1 and not is_impossible:
                        raise ValueError("For training, each question should have exactly 1 answer.")
                    if not is_impossible:
                        answer = qa["answers"][0]
                        orig_answer_text = answer["text"]
                        answer_offset = answer["answer_start"]
                        start_position = char_to_word_offset[answer_offset]
                        end_position = char_to_word_offset[answer_offset + len(orig_answer_text) - 1]
                        actual_text = " ".join(doc_tokens[start_position : end_position + 1])
                        cleaned_answer_text = " ".join(orig_answer_text.strip().split())
                        if actual_text.find(cleaned_answer_text) == -1:
                            continue
                    else:
                        start_position, end_position, orig_answer_text = -1, -1, ""
                examples.append(OriginalExample(qa["id"], qa["question"], doc_tokens, orig_answer_text,
                                                start_position, end_position, is_impossible))
    return examples


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start : new_end + 1]) == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def _check_is_max_context(doc_spans, cur_span_index, position):
    best_score = best_span_index = None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


def original_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training):
    """convert_examples_to_features: yields each OriginalFeature where the original hands it
    to output_fn (nothing is kept)."""
    unique_id = 1000000000
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)[:max_query_length]
        tok_to_orig_index, orig_to_tok_index, all_doc_tokens = [], [], []
        for i, token in enumerate(example.doc_tokens):
            orig_to_tok_index.append(len(all_doc_tokens))
            for sub_token in tokenizer.tokenize(token):
                tok_to_orig_index.append(i)
                all_doc_tokens.append(sub_token)
        if is_training and not example.is_impossible:
            tok_start = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end = len(all_doc_tokens) - 1
            tok_start, tok_end = _improve_answer_span(all_doc_tokens, tok_start, tok_end, tokenizer,
                                                      example.orig_answer_text)
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3  # [CLS], [SEP], [SEP]
        doc_spans, start_offset = [], 0
        while start_offset < len(all_doc_tokens):
            length = min(len(all_doc_tokens) - start_offset, max_tokens_for_doc)
            doc_spans.append((start_offset, length))
            if start_offset + length == len(all_doc_tokens):
                break
            start_offset += min(length, doc_stride)
        for doc_span_index, (span_start, span_length) in enumerate(doc_spans):
            tokens, segment_ids, token_to_orig_map, token_is_max_context = ["[CLS]"], [0], {}, {}
            for token in query_tokens:
                tokens.append(token)
                segment_ids.append(0)
            tokens.append("[SEP]")
            segment_ids.append(0)
            for i in range(span_length):
                split_token_index = span_start + i
                token_to_orig_map[len(tokens)] = tok_to_orig_index[split_token_index]
                token_is_max_context[len(tokens)] = _check_is_max_context(doc_spans, doc_span_index,
                                                                          split_token_index)
                tokens.append(all_doc_tokens[split_token_index])
                segment_ids.append(1)
            tokens.append("[SEP]")
            segment_ids.append(1)
            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            input_mask = [1] * len(input_ids)
            while len(input_ids) < max_seq_length:
                input_ids.append(0)
                input_mask.append(0)
                segment_ids.append(0)
            start_position = end_position = None
            if is_training and not example.is_impossible:
                doc_end = span_start + span_length - 1
                if not (tok_start >= span_start and tok_end <= doc_end):
                    start_position = end_position = 0
                else:
                    start_position = tok_start - span_start + len(query_tokens) + 2
                    end_position = tok_end - span_start + len(query_tokens) + 2
            if is_training and example.is_impossible:
                start_position = end_position = 0
            yield OriginalFeature(unique_id, example_index, doc_span_index, tokens, token_to_orig_map,
                                  token_is_max_context, input_ids, input_mask, segment_ids, start_position,
                                  end_position, example.is_impossible)
            unique_id += 1


def original_record(feature, is_training):
    """FeatureWriter.process_feature's `tf.train.Example` of `feature` (anything with the
    original's field names)."""

    def create_int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    features = collections.OrderedDict()
    features["unique_ids"] = create_int_feature([feature.unique_id])
    features["input_ids"] = create_int_feature(feature.input_ids)
    features["input_mask"] = create_int_feature(feature.input_mask)
    features["segment_ids"] = create_int_feature(feature.segment_ids)
    if is_training:
        features["start_positions"] = create_int_feature([feature.start_position])
        features["end_positions"] = create_int_feature([feature.end_position])
        features["is_impossible"] = create_int_feature([1 if feature.is_impossible else 0])
    return tf.train.Example(features=tf.train.Features(feature=features))


class OriginalFeatureWriter:
    """FeatureWriter: each processed feature's record appended to the TFRecord file `filename`."""

    def __init__(self, filename, is_training):
        self.is_training, self.num_features = is_training, 0
        self._writer = tf.io.TFRecordWriter(filename)

    def process_feature(self, feature):
        self.num_features += 1
        self._writer.write(original_record(feature, self.is_training).SerializeToString())

    def close(self):
        self._writer.close()
