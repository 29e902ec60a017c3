"""The public API holds still: every name in a module's `__all__` and every deprecated alias of a
name that moved (the `MOVED` tables of the `_deprecated.py` modules) is listed in
tests/public_api.txt, and each listed name must stay importable from its module; an alias must warn
with a DeprecationWarning naming its new place and be the new place's very object. docs/api.md is
generated from the same listing.

After a deliberate change of an `__all__` or an alias, regenerate both files:

    .venv/bin/python tests/test_public_api.py
"""

import ast
import importlib
import inspect
import os
import re
import subprocess
import sys
import warnings

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(REPO, "tests", "public_api.txt")
API_DOC = os.path.join(REPO, "docs", "api.md")
REGENERATE = ".venv/bin/python tests/test_public_api.py"


def _module_files():
    """Dotted name -> path of every module of the package."""
    found = {}
    for folder, _, files in os.walk(os.path.join(REPO, "bert_tf")):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found[os.path.relpath(path, REPO)[:-3].replace(os.sep, ".").removesuffix(".__init__")] = path
    return dict(sorted(found.items()))


def _defines_all(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        for node in tree.body
    )


def public_names():
    """[(module, name)] of every `__all__`, modules in order."""
    return [
        (module, name)
        for module, path in _module_files().items() if _defines_all(path)
        for name in sorted(importlib.import_module(module).__all__)
    ]


def aliases():
    """[(old module, old name, new module, new name)] of every `_deprecated.py`'s MOVED table."""
    found = []
    for module in _module_files():
        if module.rsplit(".", 1)[-1] == "_deprecated":
            for old_module, names in importlib.import_module(module).MOVED.items():
                found += [(old_module, name, *target.split(":")) for name, target in names.items()]
    return sorted(found)


def listing():
    """The snapshot's lines: `module:name`, and `old module:name -> new module:name` per alias."""
    lines = [f"{module}:{name}" for module, name in public_names()]
    return lines + [f"{old}:{name} -> {new}:{new_name}" for old, name, new, new_name in aliases()]


def _read_snapshot():
    if not os.path.exists(SNAPSHOT):
        return []
    with open(SNAPSHOT, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]


def _get(module, name):
    """`from module import name` as the import system does it: an attribute, else a submodule."""
    found = importlib.import_module(module)
    if hasattr(found, name):
        return getattr(found, name)
    return importlib.import_module(f"{module}.{name}")


def _summary(obj):
    """One line for docs/api.md: a docstring's first sentence, or a constant's value."""
    if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj)):
        return f"`{obj!r}`"
    paragraph = " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())  # its own, not inherited
    return re.split(r"(?<=\.)(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z`])", paragraph, maxsplit=1)[0]


def api_markdown():
    lines = [
        "# Public API",
        "",
        "What each package and module offers by its `__all__`, and the old names kept as deprecated",
        "aliases. Generated from the code by `" + REGENERATE + "`;",
        "`tests/test_public_api.py` fails when this page or `tests/public_api.txt` no longer matches",
        "it, and when a listed name stops being importable. A name not listed here may change without",
        "notice.",
    ]
    module = None
    for owner, name in public_names():
        if owner != module:
            module = owner
            lines += ["", f"## `{module}`", "", _summary(importlib.import_module(module)), ""]
        summary = _summary(_get(owner, name))
        lines.append(f"- `{name}`" + (f": {summary}" if summary else ""))
    lines += [
        "",
        "## Deprecated aliases",
        "",
        "Importable from their old place with a DeprecationWarning naming the new one (the one",
        "table of `bert_tf/_deprecated.py`), resolved only when used, until the next minor version",
        "([CHANGELOG.md](../CHANGELOG.md)).",
        "",
        "| Old name | New place |",
        "| --- | --- |",
    ]
    lines += [f"| `{old}.{name}` | `{new}.{new_name}` |" for old, name, new, new_name in aliases()]
    return "\n".join(lines) + "\n"


def write():
    with open(SNAPSHOT, "w", encoding="utf-8") as f:
        f.write(f"# The public API (see tests/test_public_api.py); regenerate with {REGENERATE}\n")
        f.write("\n".join(listing()) + "\n")
    with open(API_DOC, "w", encoding="utf-8") as f:
        f.write(api_markdown())


def test_snapshot_lists_every_all_and_alias():
    fresh, snapshot = listing(), _read_snapshot()
    gone = [line for line in snapshot if line not in fresh]
    new = [line for line in fresh if line not in snapshot]
    assert not gone and not new, (
        f"public API changed: gone {gone}, new {new}. A name that moved needs a deprecated alias at its old "
        f"place; if the change is deliberate, run {REGENERATE} and commit tests/public_api.txt and docs/api.md"
    )


@pytest.mark.parametrize("line", [line for line in _read_snapshot() if " -> " not in line])
def test_every_public_name_is_importable(line):
    module, name = line.split(":")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # a public name is no deprecated alias
        _get(module, name)


@pytest.mark.parametrize("line", [line for line in _read_snapshot() if " -> " in line])
def test_every_alias_warns_and_is_the_new_places_object(line):
    old, new = line.split(" -> ")
    old_module, name = old.split(":")
    new_module, new_name = new.split(":")
    with pytest.warns(DeprecationWarning, match=re.escape(f"{new_module}.{new_name}")):
        value = getattr(importlib.import_module(old_module), name)
    assert value is getattr(importlib.import_module(new_module), new_name)
    assert name not in getattr(importlib.import_module(old_module), "__all__", ())


def test_an_unknown_name_is_still_an_attribute_error():
    import bert_tf.export

    with pytest.raises(AttributeError, match="has no attribute 'export_nothing'"):
        bert_tf.export.export_nothing  # noqa: B018


def test_old_places_below_the_tasks_load_no_task():
    """Aliases pointing up the layers are resolved when used: importing their old modules loads no task."""
    old_modules = sorted({old for old, *_ in aliases() if not old.startswith("bert_tf.tasks.")})
    code = (
        f"import sys\nfor m in {old_modules!r}: __import__(m)\n"
        "print(sorted(m for m in sys.modules if m.startswith('bert_tf.tasks.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_api_doc_is_generated_from_the_code():
    with open(API_DOC, encoding="utf-8") as f:
        assert f.read() == api_markdown(), f"docs/api.md is stale: run {REGENERATE}"


if __name__ == "__main__":
    write()
