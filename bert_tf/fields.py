"""Typed settings: frozen dataclasses whose fields say everything a script's flag of the same name says.

A settings class is declared with `settings_class` and its fields with `setting`. Each field
carries, beside its type and default, a one-line description and what the library derives from
it:

- `shared`: whether an earlier run in the output folder must have had the same value when this
  run trains (`RUN`: it decides the steps already taken, as the learning rate does), or whether
  every run of a search must share it too (`SEARCH`: the data, the model, the lengths). A
  resumed run's checks and a search's shared settings are read from these marks, not listed.
- `path`: the value is a path; runs compare it by its real location.
- `many`: a search setting (learning rate, batch size, epochs) that may hold several values.

The scripts define their flags from the same fields (`run_scripts/settings_flags.py`), so a flag
and its field cannot drift apart. A settings object also knows which fields its maker gave
(`given`): a value taken from a Hugging Face folder, for instance, yields to a given one only
where it was not given.
"""

import dataclasses
import functools

from bert_tf.errors import SettingError

__all__ = ["RUN", "SEARCH", "Settings", "field_meta", "flag_fields", "given", "like", "setting", "settings_class",
           "shared_fields"]

RUN = "run"  # an earlier run in the output folder must share it when this run trains
SEARCH = "search"  # every run of a search shares it (and so does a resumed run)


def setting(default, help_text, *, kind=None, choices=None, shared=None, path=False, many=False, order=None,
            flag=True, required=False, compared_by_content=False):
    """A settings field.

    Args:
        default: Its default: the original release's flag default where the original has the flag.
        help_text: One line saying what it does (the flag's help).
        kind: Its type (bool, int, float or str). Default: the type of `default`.
        choices: The values it may take, or None for any of its type.
        shared: None, `RUN` or `SEARCH` (the module docstring).
        path: Whether the value is a path.
        many: Whether a search may give it several values (a tuple, or a comma-separated string).
        order: Where a search's record lists it among its shared settings (lower first).
        flag: Whether a script has a flag for it.
        required: True where a script must be given it; "unless_folder" where the starting
            checkpoint's folder may hold it instead (a config, a vocabulary).
        compared_by_content: A path whose file a resumed run compares by what it holds, not by name.

    Returns:
        A `dataclasses.field`.
    """
    kind = kind or type(default)
    if kind not in (bool, int, float, str):
        raise TypeError(f"setting kind {kind!r}: give bool, int, float or str")
    metadata = dict(help=help_text, kind=kind, choices=tuple(choices) if choices else None, shared=shared, path=path,
                    many=many, order=order, flag=flag, required=required, compared_by_content=compared_by_content)
    return dataclasses.field(default=default, metadata=metadata)


def settings_class(cls):
    """Makes `cls` a frozen, keyword-only dataclass that records which fields its maker gave.

    Its objects have a `given` attribute: the names of the fields passed when it was made, and of
    those whose value is not their default (so that a `dataclasses.replace` counts the values it
    changes). Each value is checked against its field's kind
    and choices: a wrong one raises a SettingError naming the field.

    Args:
        cls: The class, with `setting` fields.

    Returns:
        The dataclass.
    """
    cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, **values):
        if values.get("given") is None:
            values["given"] = frozenset(name for name in values if name != "given")
        init(self, **values)
        _check_kinds(self)
        # A value other than its field's default was given, whoever made the object: a copy made
        # by `dataclasses.replace` keeps its original's set, and the values it changes count too.
        changed = {f.name for f in dataclasses.fields(self) if f.name != "given"
                   and f.default is not dataclasses.MISSING and getattr(self, f.name) != f.default}
        object.__setattr__(self, "given", frozenset(self.given | changed))

    cls.__init__ = __init__
    return cls


@settings_class
class Settings:
    """The base of every settings class.

    Args:
        given: The names of the fields the settings' maker gave (see `settings_class`); None:
            those passed to the constructor and those that differ from their defaults.
    """

    given: frozenset = dataclasses.field(default=None, compare=False, repr=False, metadata={"flag": False})


_KIND_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _check_kinds(settings):
    for field in dataclasses.fields(settings):
        meta = field.metadata
        if "kind" not in meta:
            continue
        value, kind = getattr(settings, field.name), meta["kind"]
        if value is None or (meta["many"] and isinstance(value, (str, tuple, list))):
            continue
        fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            fits = True
        if not fits:
            raise SettingError(f"{field.name}={value!r} must be {_KIND_WORDS[kind]}", field.name)
        if meta["choices"] and value not in meta["choices"]:
            raise SettingError(f"{field.name}={value!r} must be one of {', '.join(map(str, meta['choices']))}",
                               field.name)


def flag_fields(settings_or_class):
    """The fields that a script has flags for.

    Args:
        settings_or_class: A settings class or object.

    Returns:
        Its `dataclasses.Field`s with a flag, in declaration order.
    """
    return [f for f in dataclasses.fields(settings_or_class) if f.metadata.get("flag", False) and "help" in f.metadata]


def shared_fields(settings_or_class, *levels):
    """The names of the fields that a resumed run or a search must share.

    Args:
        settings_or_class: A settings class or object.
        *levels: `RUN`, `SEARCH` or both.

    Returns:
        The names of the fields marked shared at one of `levels`: those with an `order` first, by
        it, then the rest in declaration order.
    """
    found = [f for f in dataclasses.fields(settings_or_class) if f.metadata.get("shared") in levels]
    ranked = sorted((f for f in found if f.metadata["order"] is not None), key=lambda f: f.metadata["order"])
    return [f.name for f in ranked] + [f.name for f in found if f.metadata["order"] is None]


def like(settings_class, name, **changes):
    """A copy of a group's field, with changes: for a task whose field says more, or differs.

    Args:
        settings_class: The class that declares the field.
        name: The field's name.
        **changes: `default`, `help_text` or any argument of `setting`.

    Returns:
        A `dataclasses.field`.
    """
    field = settings_class.__dataclass_fields__[name]
    values = {**field.metadata, "default": field.default}
    values["help_text"] = values.pop("help")
    values.update(changes)
    return setting(values.pop("default"), values.pop("help_text"), **values)


def given(settings, name):
    """Whether the maker of `settings` gave the field `name` (rather than leaving its default).

    Args:
        settings: A settings object.
        name: A field's name.

    Returns:
        A bool.
    """
    return name in (settings.given or ())


def field_meta(settings_or_class, name):
    """What `setting` says of a field.

    Args:
        settings_or_class: A settings class or object.
        name: A field's name.

    Returns:
        The field's metadata (an empty mapping for a field that is not a setting).
    """
    for field in dataclasses.fields(settings_or_class):
        if field.name == name:
            return field.metadata
    return {}
