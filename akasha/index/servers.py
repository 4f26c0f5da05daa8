"""``vector_store=`` URLs for a CorpusIndex: re-exported from :mod:`akasha.stores.urls`.

The parsing, the redaction and :func:`~akasha.stores.urls.open_store` live in
``akasha.stores``; this module keeps the names the index imported from here, and
:func:`open_backend`, which opens the previous release's shared-index backends
(``akasha.index.backends``) until the index reads and writes through stores.
"""

from __future__ import annotations

from typing import Any

from akasha.stores.urls import SCHEMES, ServerURL, open_store, parse_vector_store, redact_url


def open_backend(url: str, *, local: Any = None, token: str | None = None, retry: Any = None,
                 **options: Any) -> Any:
    """Connect to the shared index at ``url`` and return its backend (the previous release's layout).

    ``local`` is the machine's own Manifest (it keeps the stat cache); ``token``
    overrides the URL's and ``$CHROMA_AUTH_TOKEN``; ``retry`` is a Retry.
    Qdrant URLs have no backend of this kind: open them with :func:`open_store`.
    """
    import os

    from akasha.errors import ConfigError

    spec = parse_vector_store(url)
    if spec.kind == "chroma":
        from akasha.index.backends.chroma_server import ChromaServerBackend

        chosen = token or spec.token or os.environ.get("CHROMA_AUTH_TOKEN") or None
        return ChromaServerBackend(spec, token=chosen, local=local, retry=retry, **options)
    if spec.kind == "postgresql":
        from akasha.index.backends.postgres import PgVectorBackend

        return PgVectorBackend(spec, local=local, retry=retry, **options)
    raise ConfigError(f"vector_store {spec.display}: a CorpusIndex cannot use {spec.kind}:// servers yet; "
                      "use chroma:// or postgresql://")


__all__ = ["SCHEMES", "ServerURL", "open_backend", "open_store", "parse_vector_store", "redact_url"]
