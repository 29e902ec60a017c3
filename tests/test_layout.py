"""The package's shape, as the layout issue fixed it: no import circle (every import counted, those
inside functions too), no script importing another script, modelling code free of TensorFlow,
fine-tuning scripts that are flags and one call, short functions, and every name that a module,
script, benchmark or test imports from this repository still there (benchmarks are not run by the
suite: a move would otherwise break them unseen)."""

import ast
import importlib
import importlib.util
import os

import pytest

import run_scripts
from bert_tf.runs import registry

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The floors of the package, lowest first: a module imports only modules of its own floor or below,
# function-level imports included. What every layer needs (the task kinds, the run record) lives low
# in the run core, and the task folders sit above everything they use, so that training,
# checkpoints and exports never import a task (the registry names the tasks' modules as data). The
# one exception is `bert_tf/_deprecated.py`, on the lowest floor: an old name kept for code written
# against it, whose new home may be higher up, imported only when the old name is used.
FLOORS = (
    ("bert_tf._deprecated", "bert_tf.config", "bert_tf.errors", "bert_tf.fields", "bert_tf.io_utils",
     "bert_tf.kernels", "bert_tf.tokenization"),
    ("bert_tf.layers", "bert_tf.preprocessing"),
    ("bert_tf.models", "bert_tf.data"),
    ("bert_tf.runs",),  # the run core: task kinds (registry) and the run record
    ("bert_tf.checkpoints",),  # the loop restores its initial weights through them
    ("bert_tf.training",),
    ("bert_tf.export", "bert_tf.extract_features", "bert_tf.feature_extraction"),
    ("bert_tf.tasks",),
    ("bert_tf",),  # the package itself: what `import bert_tf` gives
    ("run_scripts",),
)
# A fine-tuning script (each registered kind's) is its flags and one call of the driver
# (`run_scripts/fine_tuning.py`).
FINE_TUNING_SCRIPTS = tuple(kind.script for kind in registry.KINDS.values())
MAX_FINE_TUNING_SCRIPT_LINES = 80
MAX_FUNCTION_LINES = 80
# Longer functions that only declare (each line one argument, layer or field), not logic.
DECLARATIVE = {
    # keras-hub's functional-model constructor: the config's arguments, then each layer, then the wiring.
    "bert_tf.models.bert_encoder.BertEncoder.__init__",
}


def _modules(top):
    """Dotted name -> path of every Python module under `top` (a folder of the repository)."""
    found = {}
    for folder, _, files in os.walk(os.path.join(REPO, top)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def _imports(path, known):
    """The modules of `known` that the file at `path` imports, anywhere in it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            submodules = [f"{node.module}.{alias.name}" for alias in node.names]
            # `from package import module` runs the module; `from module import name` the module.
            names = [m for m in submodules if m in known] or [node.module]
        else:
            continue
        # Every import of a submodule runs the top package first: no edge says more than that.
        out.update(name for name in names if name in known and "." in name)
    return out


def _graph():
    known = {**_modules("bert_tf"), **_modules("run_scripts")}
    return {name: _imports(path, known) for name, path in known.items()}


def _find_cycle(graph):
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            # A package importing its own submodule is how packages work, not a circle.
            if nxt == node or nxt.startswith(node + "."):
                continue
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_circle():
    graph = _graph()
    # A submodule importing its package runs the package's __init__: an edge to the package.
    cycle = _find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_circle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"a.b"}, "a.b": set()}) is None


def _floor(module):
    """The index in FLOORS of `module`'s floor: that of the longest name it is or lies under."""
    best = None
    for index, names in enumerate(FLOORS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[1]):
                best = (index, len(name))
    assert best is not None, f"{module} is on no floor of FLOORS: give it one"
    return best[0]


def _imports_up(graph):
    """`(importer, imported)` pairs where a module imports one of a higher floor (`_deprecated` modules aside)."""
    return sorted(
        (name, target) for name, targets in graph.items() if name.rsplit(".", 1)[-1] != "_deprecated"
        for target in targets if _floor(target) > _floor(name)
    )


def test_layers_import_only_downward():
    up = _imports_up(_graph())
    assert not up, "imports that run up the floors: " + ", ".join(f"{a} -> {b}" for a, b in up)


def test_the_floor_check_sees_an_import_up_and_excuses_deprecated_aliases():
    graph = {"bert_tf.training.run": {"bert_tf.tasks.classifier.task", "bert_tf.runs.record"},
             "bert_tf.export._deprecated": {"bert_tf.tasks.classifier.export"}}
    assert _imports_up(graph) == [("bert_tf.training.run", "bert_tf.tasks.classifier.task")]




def test_scripts_import_no_other_script():
    scripts = _modules("run_scripts")
    for name, path in scripts.items():
        shared = {"run_scripts", *(f"run_scripts.{name}" for name in run_scripts.SHARED_MODULES)}
        others = {m for m in _imports(path, scripts) if m not in shared}
        assert not others, f"{name} imports {others}"
    library = _modules("bert_tf")
    for name, path in library.items():
        assert not _imports(path, scripts), f"library module {name} imports a script"


def test_modelling_code_imports_no_tensorflow():
    for name, path in _modules("bert_tf").items():
        if name.startswith(("bert_tf.layers", "bert_tf.models")):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
            assert not {m for m in imported if m.split(".")[0] == "tensorflow"}, name


def _reads_flags(source):
    """The lines of a module's source that import absl's flags or name its FlagValues."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "absl" and any(a.name == "flags" for a in node.names):
            found.append(node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            found += [node.lineno for name in names if name and name.startswith("absl.flags")]
        elif isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or node.attr) == "FlagValues":
            found.append(node.lineno)
    return sorted(set(found))


def test_the_library_never_sees_a_flag():
    """Flags live in run_scripts/: each script turns them into settings at its top and calls the
    library, so that a Python user gets every guarantee the scripts give."""
    readers = {}
    for name, path in _modules("bert_tf").items():
        with open(path, encoding="utf-8") as f:
            lines = _reads_flags(f.read())
        if lines:
            readers[name] = lines
    assert not readers, readers


def test_the_flag_check_sees_an_import_and_a_flag_object():
    assert _reads_flags("from absl import flags\n") == [1]
    assert _reads_flags("import absl.flags\n") == [1]
    assert _reads_flags("from absl.flags import FLAGS\n") == [1]
    assert _reads_flags("def f(values: flags.FlagValues):\n    pass\n") == [1]
    assert _reads_flags("from absl import logging\n") == []


def test_one_table_holds_every_deprecated_alias():
    """One deprecation mechanism: `bert_tf/_deprecated.py`'s table, and no alias in the scripts."""
    tables = [name for name in _modules("bert_tf") if name.rsplit(".", 1)[-1] == "_deprecated"]
    assert tables == ["bert_tf._deprecated"], tables
    for name, path in _modules("run_scripts").items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        getattrs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
        assert not getattrs, f"{name} resolves old names: aliases live in bert_tf/_deprecated.py"


def test_fine_tuning_scripts_are_their_flags_and_one_call():
    """No ceiling on a module's lines (code bent to fit one costs more than the lines it saves);
    a fine-tuning script stays its flags and one call of the driver, which a short file shows."""
    too_long = {}
    for name, path in _modules("run_scripts").items():
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if os.path.basename(path) in FINE_TUNING_SCRIPTS and lines > MAX_FINE_TUNING_SCRIPT_LINES:
            too_long[name] = lines
    assert not too_long, too_long


def _library_functions():
    """Every top-level function name of the package's modules, but private ones."""
    names = set()
    for path in _modules("bert_tf").values():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    return names


def test_script_helpers_do_not_shadow_library_functions():
    """A helper of the scripts that turns flags into a library call has a name of its own (e.g.
    `padding_from_flags`, not the library's `padding_settings`), so a reader knows which one runs."""
    library, shadowing = _library_functions(), {}
    for module, path in _modules("run_scripts").items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} - {"main"}
        if defined & library:
            shadowing[module] = sorted(defined & library)
    assert not shadowing, shadowing


def _functions(tree, prefix):
    """(dotted name, node) of every function in `tree`, methods and nested functions too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}.{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, node
            yield from _functions(node, name)


def _docstring_lines(node):
    """The lines of `node`'s docstring: a function's length is its code's, and its documentation
    takes the lines it needs."""
    first = node.body[0]
    is_doc = isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str)
    return first.end_lineno - first.lineno + 1 if is_doc else 0


@pytest.mark.parametrize("top", ["bert_tf", "run_scripts"])
def test_functions_are_short(top):
    too_long = {}
    for module, path in _modules(top).items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for name, node in _functions(tree, module):
            lines = node.end_lineno - node.lineno + 1 - _docstring_lines(node)
            if lines > MAX_FUNCTION_LINES and name not in DECLARATIVE:
                too_long[name] = lines
    assert not too_long, too_long


def test_the_function_walk_sees_methods_and_nested_functions():
    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n")
    assert [name for name, _ in _functions(tree, "m")] == ["m.A.f", "m.A.f.g"]


def _from_imports(top):
    """(file, line, module, name) of every `from <this repository's module> import name` under `top`."""
    ours = ("bert_tf", "run_scripts", "tests", "bench")
    for folder, _, files in os.walk(os.path.join(REPO, top)):
        for file_name in sorted(files):
            if not file_name.endswith(".py"):
                continue
            path = os.path.join(folder, file_name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in ours:
                    for alias in node.names:
                        yield os.path.relpath(path, REPO), node.lineno, node.module, alias.name


def test_every_imported_name_exists():
    """Imports inside functions too (scripts and benchmarks import lazily), in every folder."""
    missing = []
    for top in ("bert_tf", "run_scripts", "bench", "tests"):
        for path, line, module, name in _from_imports(top):
            if module.startswith("bench"):
                continue  # scripts define absl flags when imported; their files are checked here themselves
            try:
                found = importlib.import_module(module)
            except ImportError as e:
                missing.append(f"{path}:{line}: {module} ({e})")
                continue
            is_submodule = hasattr(found, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None
            if not hasattr(found, name) and not is_submodule:
                missing.append(f"{path}:{line}: {module}.{name}")
    assert not missing, "\n".join(missing)


def test_every_script_in_the_librarys_table_is_its_settings_and_that_call():
    """docs/library.md's table names each script's settings and library call: they exist, and the
    script defines its flags from those settings and calls that function."""
    import re

    with open(os.path.join(REPO, "docs", "library.md"), encoding="utf-8") as f:
        rows = re.findall(r"^\| `(\w+\.py)` \| `([\w.]+)`: `(\w+)\(Settings\(\.\.\.\)\)` \|$", f.read(), re.M)
    assert len(rows) == 6, rows
    for script, module_name, function in rows:
        module = importlib.import_module(module_name)
        assert hasattr(module, "Settings") and callable(getattr(module, function)), (module_name, function)
        with open(os.path.join(REPO, "run_scripts", script), encoding="utf-8") as f:
            text = f.read()
        assert f"from {module_name} import Settings" in text and f"{function}(settings_flags.settings_from_flags(" \
            "Settings))" in text, script


# Keras' methods a layer or model overrides: documented by Keras.
_KERAS_OVERRIDES = {"call", "build", "get_config", "from_config", "compute_output_shape", "compute_output_spec",
                    "get_build_config", "build_from_config"}


def _sections(doc):
    return f"\n{doc}\n"


def _missing_sections(function, skip_args=("self", "cls")):
    """The Google-style sections `function`'s docstring lacks: Args (it takes arguments), Returns
    or Yields (it returns a value; a docstring that starts "Returns ..." says it, as Google's guide
    allows)."""
    import inspect

    doc = _sections(inspect.getdoc(function) or "")
    missing = []
    if [p for p in inspect.signature(function).parameters if p not in skip_args] and "\nArgs:\n" not in doc:
        missing.append("Args")
    try:
        tree = ast.parse(inspect.getsource(function).strip())
    except (OSError, SyntaxError):  # a lambda inside an expression
        return missing
    returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(tree))
    if returns and not any(s in doc for s in ("\nReturns:\n", "\nYields:\n", "\nReturns ")):
        missing.append("Returns")
    return missing


def _undocumented(obj):
    """The sections a public function or class lacks: a class documents its constructor's
    arguments (Args, or Attributes for a dataclass) and each public method of its own as a
    function; a settings class documents each field by its help (`bert_tf.fields.setting`)."""
    import dataclasses
    import inspect

    if inspect.isfunction(obj):
        return _missing_sections(obj)
    if not inspect.isclass(obj):
        return []
    fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
    if fields and any("help" in f.metadata for f in dataclasses.fields(obj)):
        return []
    doc = _sections(inspect.getdoc(obj) or "")
    try:
        arguments = [p for p in inspect.signature(obj).parameters if p not in ("args", "kwargs")]
    except (TypeError, ValueError):
        arguments = []
    missing = ["Args"] if arguments and "\nArgs:\n" not in doc and "\nAttributes:\n" not in doc else []
    for name, member in vars(obj).items():
        if name.startswith("_") or name in _KERAS_OVERRIDES or name in fields:
            continue
        function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        if inspect.isfunction(function):
            missing += [f"{name}: {section}" for section in _missing_sections(function)]
    return missing


def test_the_public_api_documents_its_arguments_in_google_style():
    """Every name in an `__all__` documents its arguments and what it returns in Google style
    (Args, Returns), as keras-hub and Model Garden do."""
    from tests.test_public_api import public_names

    missing, seen = {}, set()
    for module, name in public_names():
        obj = getattr(importlib.import_module(module), name, None)  # None: a submodule not yet imported
        home = f"{getattr(obj, '__module__', module)}.{name}"
        if home in seen or not home.startswith("bert_tf."):
            continue
        seen.add(home)
        if found := _undocumented(obj):
            missing[home] = found
    assert not missing, missing


def test_the_docstring_check_sees_a_missing_section():
    def undocumented(x):
        """Something."""
        return x

    def documented(x):
        """Something.

        Args:
            x: A thing.

        Returns:
            It.
        """
        return x

    class Plain:
        """A class."""

        def __init__(self, size):
            self.size = size

        def grown(self, by):
            """Bigger."""
            return self.size + by

    assert _undocumented(undocumented) == ["Args", "Returns"] and _undocumented(documented) == []
    assert _undocumented(Plain) == ["Args", "grown: Args", "grown: Returns"]


def test_no_task_is_named_below_the_tasks():
    """A task is its folder: the loop, the exports, the checkpoints and the run core dispatch on the
    registry and name no kind (as a string the code compares or passes)."""
    names = {name for kind in registry.KINDS.values() for name in (kind.name, *kind.legacy_names) if name}
    found = []
    for top in ("training", "export", "checkpoints", "runs"):
        for module, path in _modules(os.path.join("bert_tf", top)).items():
            with open(path, encoding="utf-8") as f:
                found += [f"{module}:{line}" for line in _task_names(ast.parse(f.read(), path), names)]
    assert not found, found


def _task_names(tree, names):
    """`lineno 'name'` of each string constant of `tree` that is one of `names`."""
    return [f"{node.lineno} {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names]


def test_the_task_name_check_sees_a_compared_name_and_not_prose():
    source = '"""squad runs."""\nif kind == "squad":\n    x = f"a {kind} run"\n'
    assert _task_names(ast.parse(source), {"squad"}) == ["2 'squad'"]
