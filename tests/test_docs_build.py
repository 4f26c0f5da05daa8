"""The documentation site builds with ``mkdocs build --strict`` (every warning is an error).

The build also runs the docs hook's checks (an undocumented RAG option or error
class fails it) and renders the API reference from the docstrings, so a broken
docstring cross-reference fails CI here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_site_builds_strict(site):
    assert (site / "index.html").is_file()


def test_generated_sections_are_rendered(site):
    import akasha.errors
    from akasha.options import RAGOptions

    options = (site / "options" / "index.html").read_text(encoding="utf-8")
    for name in RAGOptions.names():
        assert f'id="{name}"' in options, name
    trouble = (site / "troubleshooting" / "index.html").read_text(encoding="utf-8")
    for name in ("ConfigError", "MissingAPIKeyError", "OrderingError", "BudgetError"):
        assert hasattr(akasha.errors, name)
        assert f"Where akasha raises <code>{name}</code>" in trouble, name
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "akasha ask" in cli and "--search-type" in cli
    assert "akasha:cli" not in cli


def test_api_reference_comes_from_docstrings(site):
    import inspect

    from akasha.rag import RAG

    api = (site / "api" / "rag" / "index.html").read_text(encoding="utf-8")
    for name in ("__call__", "selfask_RAG", "search", "index"):
        assert f'id="akasha.rag.RAG.{name}"' in api, name
    # the docstring's words, rendered (reST roles turned into code, not left as ":class:")
    first_line = inspect.getdoc(RAG).splitlines()[0]
    assert first_line in api
    assert ":class:" not in api and ":meth:" not in api
