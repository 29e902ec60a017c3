"""The tree passes the linter configured in pyproject.toml (ruff: pycodestyle, pyflakes, import
sorting, bug-finding, pyupgrade), so that the README's test command checks it too."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_passes():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format=concise", REPO],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )
    assert "No module named ruff" not in result.stderr, "ruff is missing: pip install -e '.[test]'"
    assert result.returncode == 0, result.stdout + result.stderr
