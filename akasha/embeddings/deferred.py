"""An embedder built on first use: a search that needs no vectors never builds (or imports) it.

So ``RAG(...).search(folder, q, search_type="bm25")`` with the default ``embeddings="openai:..."``
answers without the ``openai`` package or a key; the embedder is built when a search first needs vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from akasha.providers.clients import Lazy


class DeferredEmbedder:
    """Stands for the embedder ``build()`` returns; builds it once, on the first attribute asked for.
    ``display_name`` names it without building it (its spec until then), for traces and logs."""

    def __init__(self, build: Callable[[], Any], label: str) -> None:
        self._label = label
        self._real: Lazy[Any] = Lazy(build)

    @property
    def built(self) -> bool:
        """Whether the embedder was built (a search or ingestion needed vectors)."""
        return self._real.built

    @property
    def display_name(self) -> str:
        return str(getattr(self._real.peek(), "name", self._label)) if self._real.built else self._label

    def get(self) -> Any:
        """The embedder, built now if it was not yet (errors such as MissingExtraError surface here)."""
        return self._real.get()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_label", "_real"):
            raise AttributeError(name)
        return getattr(self.get(), name)

    def __repr__(self) -> str:
        return f"DeferredEmbedder({self.display_name!r}, built={self.built})"


__all__ = ["DeferredEmbedder"]
