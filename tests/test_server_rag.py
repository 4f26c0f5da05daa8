"""The facade on a shared index: ``akasha.RAG(..., vector_store=URL)``."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers_fixtures import pg_server  # noqa: F401

import akasha
from akasha.errors import ConfigError


def test_bad_vector_store_url_fails_at_construction():
    with pytest.raises(ConfigError, match="unknown vector_store scheme"):
        akasha.RAG(model="extractive", embeddings="hash", vector_store="mongodb://localhost/x")


@pytest.mark.integration
def test_rag_search_and_index_on_postgres_second_machine_embeds_nothing(tmp_path, pg_server):  # noqa: F811
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "filters.md").write_text("The air filter should be replaced every 12 months or every 15,000 km.")
    (docs / "coolant.md").write_text("Coolant must be changed every 5 years; use the blue long-life coolant.")
    url = pg_server.dsn(table="ragtest")
    first = akasha.RAG(model="extractive", embeddings="hash", vector_store=url, cache_dir=tmp_path / "a")
    assert first.index(docs).embedded > 0
    hits = first.search(docs, "when to change the coolant", k=1)
    assert Path(hits[0].path).name == "coolant.md"
    second = akasha.RAG(model="extractive", embeddings="hash", vector_store=url, cache_dir=tmp_path / "b")
    assert second.index(docs).embedded == 0
    assert Path(second.search(docs, "air filter interval", k=1)[0].path).name == "filters.md"
