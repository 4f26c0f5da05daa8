"""The lint and type-check setup: CI runs ruff and mypy from the project's own files, and every
``# type: ignore`` that is left in akasha/ names its code and says why (neither tool checks the why).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def unexplained_ignores(text: str) -> list[tuple[int, str]]:
    """Lines whose ``# type: ignore`` lacks a code, or a reason (a comment after it or on the line above)."""
    lines = text.splitlines()
    found = []
    for number, line in enumerate(lines, start=1):
        match = IGNORE.search(line)
        if match is None:
            continue
        reason_after = match["rest"].strip().startswith("#") and len(match["rest"].strip()) > 2
        above = lines[number - 2].strip() if number >= 2 else ""
        reason_above = above.startswith("#") and "type: ignore" not in above
        if not match["codes"] or not (reason_after or reason_above):
            found.append((number, line.strip()))
    return found


def test_every_type_ignore_in_akasha_names_its_code_and_its_reason() -> None:
    problems = []
    for path in sorted((ROOT / "akasha").rglob("*.py")):
        for number, line in unexplained_ignores(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(ROOT)}:{number}: {line}")
    assert problems == []


def test_the_check_finds_an_ignore_without_a_reason_or_a_code() -> None:
    text = "\n".join([
        "x = f()  # type: ignore[arg-type]",
        "y = f()  # type: ignore",
        "# mypy cannot see the invariant here",
        "z = f()  # type: ignore[misc]",
        "w = f()  # type: ignore[misc]  # the reason",
    ])
    assert [number for number, _ in unexplained_ignores(text)] == [1, 2]


def test_ci_runs_ruff_and_mypy_before_the_tests_from_the_dev_extra() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lint, types, tests = (script.index(cmd) for cmd in ("ruff check akasha", "python -m mypy", "python -m pytest"))
    assert lint < tests and types < tests
    assert "set -euo pipefail" in script  # a failing check stops the run
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = " ".join(project["project"]["optional-dependencies"]["dev"])
    assert "ruff" in dev and "mypy" in dev
    assert project["tool"]["mypy"]["files"] == ["akasha"]
    assert project["tool"]["ruff"]["lint"]["select"]
