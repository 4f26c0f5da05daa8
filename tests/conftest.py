"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import akasha.registry as registry


@pytest.fixture
def register_embedder() -> Iterator[Callable[[str, Any], Any]]:
    """``register_embedder(name, embedder)``: a RAGPipeline file's ``embeddings: {provider: <name>}`` builds
    ``embedder`` (the same object, so a test can count its calls) until the test ends; returns ``embedder``."""
    names: list[str] = []

    def register(name: str, embedder: Any) -> Any:
        registry.register("embedder", name, lambda config, context: embedder, replace=True)
        names.append(name)
        return embedder

    yield register
    for name in names:
        registry.unregister("embedder", name)


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Every registration a test makes (``registry.register``) is undone when it ends."""
    before = {kind: dict(entries) for kind, entries in registry._registered.items()}
    yield
    for kind in registry._registered:
        registry._registered[kind] = before[kind]
