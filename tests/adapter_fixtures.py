"""The small corpus and RAG both framework-adapter test files use.

``from adapter_fixtures import docs, rag  # noqa: F401``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import akasha


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "paris.txt").write_text("Paris is the capital of France. The Seine flows through Paris.", encoding="utf-8")
    (folder / "tokyo.txt").write_text("Tokyo is the capital of Japan. It is a very large city.", encoding="utf-8")
    (folder / "bread.txt").write_text("Sourdough bread needs flour, water, salt and a starter.", encoding="utf-8")
    return folder


@pytest.fixture
def rag():
    return akasha.RAG(model="extractive", embeddings="hash", cache_dir=":memory:")
