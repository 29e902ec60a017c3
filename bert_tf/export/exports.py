"""What export_saved_model.py does, without its flags: `read` finds and checks what an export type
needs (the files named, else those Google's layout or a run keeps beside the checkpoint) and
loads the model; `Export.write` writes the SavedModel.

    exports.read("classifier", init_checkpoint="/tmp/mrpc_output").write("/tmp/mrpc_serving")

The types: "encoder" (TF Hub's BERT encoder, from Google's checkpoint, one of ours, a .keras
file or a Hugging Face folder), "preprocessor" (its text preprocessor, from a vocabulary alone)
and every fine-tuning task kind of `bert_tf.runs.registry` (a run's fine-tuned model, or a
fine-tuned Hugging Face folder's, behind the kind's exporter, sized and fed as the run's record
says).

`read`'s errors are ValueErrors (FileNotFoundErrors) whose message starts with the setting at
fault (`init_checkpoint=...: ...`); `write`'s name the file (the vocabulary, the export folder).
"""

import dataclasses

from bert_tf import tokenization
from bert_tf.checkpoints import sources
from bert_tf.errors import shown
from bert_tf.export.common import check_seq_length
from bert_tf.export.encoder import export_encoder
from bert_tf.export.preprocessor import export_preprocessor
from bert_tf.export.serving import (  # noqa: F401 - MIXED_PRECISION, check_length_bucket: kept importable from here
    DEFAULT_SERVING,
    MIXED_PRECISION,
    check_length_bucket,
)
from bert_tf.runs import record as run_record
from bert_tf.runs import registry

EXPORT_TYPES = ("encoder", "preprocessor", *registry.KINDS)
PREPROCESSOR_SEQ_LENGTH = 128  # the preprocessor's packing when none is given (TF Hub's)


@dataclasses.dataclass(frozen=True)
class Export:
    """What `read` found for one export: all that `write` needs."""

    export_type: str
    vocab_file: str | None
    do_lower_case: bool | None  # the casing the export records (None: an encoder without a vocabulary)
    seq_length: int | None = None  # the packing of the preprocessor and of a task export
    model: object = None  # the encoder or the fine-tuned model, with its weights
    record: run_record.RunRecord | None = None  # a task export's run record
    options: dict = dataclasses.field(default_factory=dict)  # the kind's exporter's own (squad: max_query_length)
    warnings: tuple = ()  # about the config read (a misspelt key), each starting with its setting
    serving: object = DEFAULT_SERVING  # a text-in export's ServingOptions (the preprocessor: its length_bucket)

    def write(self, export_dir, overwrite=False):
        """Writes the SavedModel to `export_dir` (under a temporary name, renamed when complete;
        an existing one is replaced only with `overwrite`). Returns what was exported, in words."""
        if self.export_type == "preprocessor":
            export_preprocessor(
                self.vocab_file, self.do_lower_case, export_dir, self.seq_length, overwrite,
                self.serving.length_bucket,
            )
            return (
                f"the preprocessor of {self.vocab_file} (do_lower_case={self.do_lower_case}, "
                f"seq_length {self.seq_length}; {self.serving.describe()})"
            )
        if self.export_type == "encoder":
            export_encoder(self.model, export_dir, self.vocab_file, self.do_lower_case, overwrite)
            return f"a BertEncoder ({self.model.num_hidden_layers} layers, hidden {self.model.hidden_size})"
        self.record.task_kind.export(
            self.model, self.record, vocab_file=self.vocab_file, seq_length=self.seq_length, export_dir=export_dir,
            overwrite=overwrite, serving=self.serving, **self.options,
        )
        return (
            f"a {type(self.model).__name__} of task {self.record.task_name!r} (seq_length {self.seq_length}; "
            f"{self.serving.describe()})"
        )


def read(export_type, init_checkpoint=None, bert_config_file=None, vocab_file=None, do_lower_case=None,
         seq_length=None, max_query_length=None, serving=DEFAULT_SERVING, **options):
    """The `Export` of `export_type` (one of EXPORT_TYPES). `init_checkpoint`: Google's checkpoint,
    ours (a run's folder or its ckpt-N), a .keras file or a Hugging Face folder (not read by the
    preprocessor); `bert_config_file`, `vocab_file`: default the bert_config.json (a Hugging Face
    folder's config.json) and vocab.txt beside it.
    `do_lower_case`, `seq_length`: None when not given: a task export takes its run's (a casing
    given must be the run's), the others True and PREPROCESSOR_SEQ_LENGTH. `max_query_length`:
    squad's, default the run's. `serving`: how a task export runs its model (`ServingOptions`); the
    preprocessor takes its length_bucket alone, the encoder (ids in, any length) none of it.
    `options`: the kind's exporter's own (`TaskKind.export_options`: the windows' `doc_stride`,
    SQuAD's n-best settings), each default the run's or the exporter's where None."""
    if export_type not in registry.KINDS:  # no model run per request: of the options, the length bucket alone
        serving = serving.without_model(export_type, registry.KINDS)
    if export_type == "preprocessor":
        return dataclasses.replace(_preprocessor(vocab_file, do_lower_case, seq_length), serving=serving)
    if not init_checkpoint:
        raise ValueError(f"{shown.init_checkpoint} is required by export_type={export_type}")
    sources.check_not_search(init_checkpoint, "init_checkpoint")
    if export_type == "encoder":
        return _encoder(init_checkpoint, bert_config_file, vocab_file, do_lower_case)
    kind = registry.get(export_type)
    given = {"max_query_length": max_query_length, **options}
    for name, value in given.items():
        if value is not None and name not in kind.export_options():
            raise ValueError(f"{shown(name)} is not a setting of export_type={export_type}")
    options = {name: value for name, value in given.items() if value is not None}
    export = _task(kind, init_checkpoint, bert_config_file, vocab_file, do_lower_case, seq_length, options)
    return dataclasses.replace(export, serving=serving)


def check_casing(export_type, init_checkpoint, vocab_file, do_lower_case):
    """The original's check of the casing given against a released checkpoint's name
    (`tokenization.validate_case_matches_checkpoint`, its message naming the flags), for the one
    export that records the casing given: an encoder with a vocabulary (named or beside it). A
    task export records its run's casing; the preprocessor reads no checkpoint."""
    if export_type == "encoder" and init_checkpoint and (vocab_file or sources.beside(init_checkpoint, "vocab.txt")):
        tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)


def _preprocessor(vocab_file, do_lower_case, seq_length):
    if not vocab_file:
        raise ValueError(f"{shown.vocab_file} is required by export_type=preprocessor")
    vocab_file = sources.named_or_beside(vocab_file, "vocab_file", None, None)
    seq_length = PREPROCESSOR_SEQ_LENGTH if seq_length is None else seq_length
    if seq_length < 3:
        raise ValueError(f"{shown.seq_length}={seq_length} leaves no room for [CLS] A [SEP] B [SEP]")
    return Export("preprocessor", vocab_file, True if do_lower_case is None else do_lower_case, seq_length)


def _config(init_checkpoint, bert_config_file):
    """`(config, warnings)`: the config named, else the bert_config.json beside the checkpoint or
    a Hugging Face folder's config.json; none for a .keras file without either (it carries its own)."""
    config, warnings = sources.config_of(init_checkpoint, bert_config_file)
    if config is not None or init_checkpoint.endswith(".keras"):
        return config, warnings
    raise ValueError(f"{shown.bert_config_file} is required (no bert_config.json beside {shown.init_checkpoint})")


def _encoder(init_checkpoint, bert_config_file, vocab_file, do_lower_case):
    config, warnings = _config(init_checkpoint, bert_config_file)
    vocab_file = sources.named_or_beside(vocab_file, "vocab_file", init_checkpoint, "vocab.txt")
    # The casing goes into the export with its vocabulary (TF Hub's encoders carry both).
    casing = sources.casing(init_checkpoint, do_lower_case) if vocab_file else None
    with sources.prefixed(f"init_checkpoint={init_checkpoint}: "):
        encoder = sources.encoder(init_checkpoint, config)
    return Export("encoder", vocab_file, casing, model=encoder, warnings=warnings)


def _task(kind, init_checkpoint, bert_config_file, vocab_file, do_lower_case, seq_length, options):
    at = f"init_checkpoint={init_checkpoint}: "
    with sources.prefixed(at):
        record = sources.run_record_for(init_checkpoint, kind.name)
    sources.run_casing(record, init_checkpoint, do_lower_case)
    config, warnings = _config(init_checkpoint, bert_config_file)
    vocab_file = sources.named_or_beside(vocab_file, "vocab_file", init_checkpoint, "vocab.txt")
    if vocab_file is None:
        raise ValueError(f"{shown.vocab_file} is required (no vocab.txt beside "
                         f"{shown.init_checkpoint}={init_checkpoint})")
    with sources.prefixed(at):
        model, config = sources.task_model(init_checkpoint, record, config)
    seq_length = record.max_seq_length if seq_length is None else seq_length  # the length it was fine-tuned at
    with sources.prefixed("seq_length: "):
        check_seq_length(seq_length, config)
    return Export(kind.name, vocab_file, record.do_lower_case, seq_length, model, record, options, warnings)
