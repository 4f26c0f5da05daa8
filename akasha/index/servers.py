"""``vector_store=`` URLs for a CorpusIndex: the names earlier releases imported from here, now living
in :mod:`akasha.stores.urls`."""

from __future__ import annotations

from akasha.stores.urls import SCHEMES, ServerURL, open_store, parse_vector_store, redact_url

__all__ = ["SCHEMES", "ServerURL", "open_store", "parse_vector_store", "redact_url"]
