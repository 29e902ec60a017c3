"""A script's flags, generated from a settings class (`bert_tf.fields`), and the settings read back
from them: a flag and its field have one name, type, default and description."""

import sys

from absl import flags

from bert_tf import fields

# What the help of a flag that takes a search's values adds to its field's description.
SEARCH_HELP = "A comma-separated list makes a search (--restarts)."


def define_flags(settings_class, flag_values=None, names=None, searchable=True, mark_required=True, module=None):
    """Defines a flag for each field of `settings_class` that has one, as the calling script's own
    (absl lists them under it in `--help`): a string for a search field (a comma-separated list),
    an enum for a field with choices. A required field is marked required; one that a starting
    folder may hold instead (a config, a vocabulary) is required unless --init_checkpoint has it.

    Args:
        settings_class: A settings class (or a group of `bert_tf.training.groups`).
        flag_values: absl's FlagValues to define them in (default: absl's global FLAGS).
        names: Only these fields' flags (default: all).
        searchable: False: a search field's flag takes one number, of its type.
        mark_required: False: required fields are not marked (the script marks them itself).
        module: The module the flags are listed under (default: the caller's).
    """
    flag_values = flag_values if flag_values is not None else flags.FLAGS
    if module is None:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        module = sys.argv[0] if caller == "__main__" else caller
    unless_folder = []
    for field in fields.flag_fields(settings_class):
        meta, name = field.metadata, field.name
        if names is not None and name not in names:
            continue
        kind, help_text, default = meta["kind"], meta["help"], field.default
        common = dict(flag_values=flag_values, module_name=module)
        if meta["many"] and searchable:  # a string: the search's values
            flags.DEFINE_string(name, f"{default:g}", f"{help_text} {SEARCH_HELP}", **common)
        elif meta["choices"]:
            flags.DEFINE_enum(name, default, list(meta["choices"]), help_text, **common)
        else:
            define_kind = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
                           str: flags.DEFINE_string}[kind]
            define_kind(name, default, help_text, **common)
        if not mark_required:
            continue
        if meta["required"] is True:
            flags.mark_flag_as_required(name, flag_values)
        elif meta["required"] == "unless_folder":
            unless_folder.append(name)
    if unless_folder:
        require_unless_hf_folder(tuple(unless_folder), flag_values)


def settings_from_flags(settings_class, flag_values=None):
    """The settings `settings_class` of the parsed flags: every flag's value, and as `given` the
    flags the command line set."""
    flag_values = flag_values if flag_values is not None else flags.FLAGS
    names = [field.name for field in fields.flag_fields(settings_class)]
    values = {name: flag_values[name].value for name in names}
    return settings_class(**values, given=frozenset(name for name in names if flag_values[name].present))


def _from_teacher(values, name):
    """Whether a distilled run takes setting `name` from its --teacher (`bert_tf.tasks.distillation`):
    the vocabulary always, the config with --student_layers."""
    if "teacher" not in values or not values.teacher:
        return False
    return name == "vocab_file" or (name == "bert_config_file" and bool(values.student_layers))


def require_unless_hf_folder(names, flag_values=None):
    """`flags.mark_flag_as_required` for `names` (its check and message), but when --init_checkpoint
    is a Hugging Face folder or a sentence-transformers folder (it holds what they name), or has
    the file a flag names beside it (`bert_tf.training.prepare.resolve_sources`: a run's folder, Google's)."""

    def given(value, name):  # the folder is looked at only when the flag is missing (the import loads TensorFlow)
        from bert_tf.checkpoints import hf, sentence_transformers, sources

        values = flags.FLAGS if flag_values is None else flag_values
        folder = values.init_checkpoint
        if value is None and _from_teacher(values, name):
            return True
        return value is not None or hf.is_hf_folder(folder) or sentence_transformers.is_sentence_transformers_folder(
            folder) or bool(folder and sources.beside(folder, sources.FILES_BESIDE[name]))

    for name in names:
        flags.register_validator(name, lambda value, name=name: given(value, name),
                                 message=f"Flag --{name} must have a value other than None.",
                                 flag_values=flags.FLAGS if flag_values is None else flag_values)
