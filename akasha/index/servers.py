"""``vector_store=`` URLs for a CorpusIndex: re-exported from :mod:`akasha.stores.urls`.

The parsing, the redaction and :func:`~akasha.stores.urls.open_store` live in
``akasha.stores``; this module keeps the names earlier releases imported from here.
"""

from __future__ import annotations

from akasha.stores.urls import SCHEMES, ServerURL, open_store, parse_vector_store, redact_url

__all__ = ["SCHEMES", "ServerURL", "open_store", "parse_vector_store", "redact_url"]
