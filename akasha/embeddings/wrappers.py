"""Adapters that make user callables and foreign embedding objects look like an Embedder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import as_matrix


def _callable_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or type(fn).__module__
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"callable:{module}.{qualname}"


class CallableEmbedder:
    """Wraps ``fn(list[str]) -> vectors``; its cache namespace is the function's qualified name."""

    batch_size = 256

    def __init__(self, fn: Callable[[list[str]], Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or _callable_name(fn)
        self.dimension: int | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        matrix = as_matrix(self.fn(list(texts)), len(texts), self.name)
        self.dimension = matrix.shape[1] if len(texts) else self.dimension
        return matrix

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class ObjectEmbedder:
    """Wraps any object with ``embed_documents``/``embed_query`` (e.g. LangChain embeddings)."""

    batch_size = 256

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        model = getattr(obj, "model", None) or getattr(obj, "model_name", None)
        self.name = f"object:{type(obj).__module__}.{type(obj).__qualname__}" + (f":{model}" if model else "")
        self.dimension: int | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return as_matrix(self.obj.embed_documents(list(texts)), len(texts), self.name)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.obj.embed_query(text), dtype=np.float32)
