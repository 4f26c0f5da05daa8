"""Adapters that make user callables and foreign embedding objects look like an Embedder."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from akasha.embeddings.base import as_matrix
from akasha.providers.endpoints import PUBLIC_HOSTS, endpoint_label, host_of, identity_suffix


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


#: Attributes that hold the address an embeddings object talks to (LangChain spellings included), first wins.
_ENDPOINT_ATTRIBUTES = ("base_url", "openai_api_base", "api_base", "azure_endpoint", "endpoint",
                        "endpoint_url", "inference_server_url", "host")
#: Attributes whose value changes the vectors an object returns for the same model.
_VECTOR_ATTRIBUTES = ("deployment", "azure_deployment", "dimensions", "output_dimensionality",
                      "task_type", "query_instruction", "embed_instruction", "model_kwargs", "encode_kwargs")
#: Keys of ``model_kwargs``/``encode_kwargs`` that change speed or placement, not vectors.
_NEUTRAL_KEYS = frozenset({"device", "batch_size", "show_progress_bar", "convert_to_numpy", "convert_to_tensor",
                           "trust_remote_code", "token", "cache_folder", "local_files_only", "num_workers"})
#: Public endpoints an object reaches by default; naming them would only rename existing caches.
_PUBLIC_HOSTS = frozenset().union(*PUBLIC_HOSTS.values())


def _plain(value: Any) -> Any:
    """``value`` without the keys of ``_NEUTRAL_KEYS`` when it is a mapping; None when empty."""
    if isinstance(value, dict):
        value = {str(k): v for k, v in value.items() if str(k) not in _NEUTRAL_KEYS}
    if value is None or value == {} or value == "" or isinstance(value, bool) and not value:
        return None
    return value


def object_identity(obj: Any) -> str:
    """The cache identity of an embeddings object: class, model, endpoint and vector-changing settings.

    ``object:<module>.<class>[:<model>][@<endpoint>][;key=value...]``. The endpoint is the first
    of ``_ENDPOINT_ATTRIBUTES`` set (public endpoints left out, as for ``openai:`` strings);
    settings come from ``_VECTOR_ATTRIBUTES``, never keys or tokens. Stable across releases (cache keys).
    """
    model = getattr(obj, "model", None) or getattr(obj, "model_name", None)
    name = f"object:{type(obj).__module__}.{type(obj).__qualname__}" + (f":{model}" if model else "")
    for attribute in _ENDPOINT_ATTRIBUTES:
        value = getattr(obj, attribute, None)
        if isinstance(value, str) and value.strip():
            label = endpoint_label(value)
            if host_of(label) not in _PUBLIC_HOSTS:
                name += identity_suffix(label)
            break
    for attribute in _VECTOR_ATTRIBUTES:
        value = _plain(getattr(obj, attribute, None))
        if value is not None:
            name += f";{attribute}={json.dumps(value, sort_keys=True, default=str)}"
    return name


class ObjectEmbedder:
    """Wraps any object with ``embed_documents``/``embed_query`` (e.g. LangChain embeddings); its ``name``
    (:func:`object_identity`) keeps objects with other endpoints or vector settings from sharing a cache."""

    batch_size = 256

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.name = object_identity(obj)
        self.dimension: int | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return as_matrix(self.obj.embed_documents(list(texts)), len(texts), self.name)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.obj.embed_query(text), dtype=np.float32)
