"""The docs stay honest: README.md and docs/ link only to what exists, their command lines use only
flags the scripts define, and docs/flags/ is what docs/generate_flags.py writes today."""

import ast
import glob
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX_LINES = 300
# absl's own flags, which every script takes.
ABSL_FLAGS = {
    "help", "helpfull", "helpshort", "helpxml", "flagfile", "undefok", "only_check_args", "pdb", "pdb_post_mortem",
    "run_with_pdb", "run_with_profiling", "profile_file", "use_cprofile_for_profiling", "logtostderr",
    "alsologtostderr", "log_dir", "verbosity", "v", "stderrthreshold", "showprefixforinfo", "logger_levels",
}
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A script on a command line: `python run_scripts/x.py`, `bench/x.py`, or a bare `x.py` (run_scripts' first).
SCRIPT = re.compile(r"(?:^|[\s/])(?:(run_scripts|bench)/)?(\w+)\.py\b")
FLAG = re.compile(r"(?<![\w-])--(\w+)")


def _pages():
    docs = glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    return [os.path.join(REPO, "README.md"), *sorted(docs)]


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path):
    text = FENCE.sub("", _read(path))
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def broken_links(path):
    """'target (why)' for each relative link of the page at `path` that does not resolve."""
    text = FENCE.sub("", _read(path))
    text = re.sub(r"`[^`]*`", "", text)  # code spans are not links
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(resolved):
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.endswith(".md") and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    return broken


def _command_lines(text):
    """Each line of a fenced block (backslash continuations joined) and each code span: what a reader runs."""
    for block in FENCE.findall(text):
        yield from re.sub(r"\\\n", " ", block).splitlines()
    yield from (" ".join(span.split()) for span in re.findall(r"`([^`]+)`", FENCE.sub("", text)))


def _bench_flags(name, seen=None):
    """{flag: is_bool} that bench/NAME.py defines, with those of the bench modules it imports."""
    seen = seen if seen is not None else set()
    path = os.path.join(REPO, "bench", f"{name}.py")
    if name in seen or not os.path.exists(path):
        return {}
    seen.add(name)
    found = {}
    for node in ast.walk(ast.parse(_read(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("DEFINE"):
            if node.args and isinstance(node.args[0], ast.Constant):
                found[node.args[0].value] = node.func.attr in ("DEFINE_bool", "DEFINE_boolean")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_bench_flags(alias.name, seen))
    return found


def _script_flags(folder, name):
    """{flag: is_bool} of run_scripts/NAME.py (from its generated page) or bench/NAME.py; None if no script."""
    if folder == "bench":
        return _bench_flags(name) if os.path.exists(os.path.join(REPO, "bench", f"{name}.py")) else None
    page = os.path.join(REPO, "docs", "flags", f"{name}.md")
    if not os.path.exists(page):
        return None
    return {flag: kind == "bool" for flag, kind in re.findall(r"^\| `--(\w+)` \| (\w+)", _read(page), re.M)}


def unknown_flags(path):
    """'script --flag' for each flag a command line of the page at `path` gives its script that it lacks."""
    unknown = []
    for line in _command_lines(_read(path)):
        line = re.split(r"\s#|&&|;|\|", line)[0]  # one command, no comment
        line = re.sub(r"\"[^\"]*\"|'[^']*'", '""', line)  # a quoted value's own flags are another program's
        match = SCRIPT.search(line)
        if not match:
            continue
        folder, name = match.groups()
        if folder is None:
            folder = "run_scripts" if os.path.exists(os.path.join(REPO, "run_scripts", f"{name}.py")) else "bench"
        known = _script_flags(folder, name)
        if known is None:
            continue
        for flag in FLAG.findall(line[match.end():]):
            negated = flag.startswith("no") and known.get(flag[2:]) is True
            if flag not in known and not negated and flag not in ABSL_FLAGS:
                unknown.append(f"{folder}/{name}.py --{flag}")
    return unknown


def test_every_relative_link_resolves():
    broken = {os.path.relpath(p, REPO): broken_links(p) for p in _pages()}
    assert not {page: links for page, links in broken.items() if links}


def test_every_flag_on_a_command_line_is_one_its_script_defines():
    unknown = {os.path.relpath(p, REPO): unknown_flags(p) for p in _pages()}
    assert not {page: flags for page, flags in unknown.items() if flags}


def test_the_checks_see_a_broken_link_and_an_unknown_flag(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\nSee [here](missing.md), [there](page.md#title) and [nowhere](page.md#none).\n\n"
        "```sh\npython run_scripts/run_classifier.py --task_name=MRPC \\\n  --no_such_flag=1 --nodo_train\n```\n\n"
        "Also `bench/serving.py --save_defaults --nor_this` and `run_squad.py --doc_stride=64`.\n"
    )
    assert broken_links(str(page)) == ["missing.md (no such file)", "page.md#none (no such heading)"]
    assert unknown_flags(str(page)) == ["run_scripts/run_classifier.py --no_such_flag", "bench/serving.py --nor_this"]


def test_the_readme_is_short():
    lines = _read(os.path.join(REPO, "README.md")).count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail to docs/"


@pytest.mark.slow
def test_the_flag_reference_equals_a_fresh_generation(tmp_path):
    """One process imports every script (TensorFlow loads once), as docs/generate_flags.py does."""
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "docs", "generate_flags.py"), f"--out={tmp_path}"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    committed = os.path.join(REPO, "docs", "flags")
    fresh = sorted(os.listdir(tmp_path))
    assert sorted(n for n in os.listdir(committed) if n.endswith(".md")) == fresh
    stale = [n for n in fresh if _read(os.path.join(committed, n)) != (tmp_path / n).read_text(encoding="utf-8")]
    assert not stale, f"docs/flags/{stale} differ from the scripts' flags: run python docs/generate_flags.py"
