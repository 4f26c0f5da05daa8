"""rag.acall / rag.astream: the async facade, through the providers' async clients.

Also checks that the plain sync call keeps working when an event loop is already
running in the thread (as in Jupyter).
"""

from __future__ import annotations

import asyncio

import pytest

import akasha
from facade_fixtures import write_corpus

pytest.importorskip("openai")
from servers.base import serve  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

KEY = "sk-test-SECRET-123"


@pytest.fixture
def openai_env(monkeypatch):
    app = OpenAIApp(api_key=KEY)
    app.chat_reply = "Replace the air filter every 12 months [filters.md]."
    with serve(app) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        yield app


def test_acall_uses_the_async_client_and_fills_docs(tmp_path, openai_env):
    folder = write_corpus(tmp_path / "docs")
    rag = akasha.RAG(model="openai:gpt-test", embeddings="hash", cache_dir=":memory:")

    answer = asyncio.run(rag.acall(folder, "How often is the air filter replaced?"))

    assert answer.startswith("Replace the air filter every 12 months")
    assert rag.docs and rag.docs[0].path.endswith("filters.md")
    assert [entry["stage"] for entry in rag.trace][-1] == "generate"
    assert openai_env.request_count("chat/completions") == 1
    assert rag.response == answer


def test_astream_yields_pieces_and_fills_response(tmp_path, openai_env):
    folder = write_corpus(tmp_path / "docs")
    rag = akasha.RAG(model="openai:gpt-test", embeddings="hash", cache_dir=":memory:")

    async def collect() -> list[str]:
        return [piece async for piece in rag.astream(folder, "How often is the air filter replaced?")]

    pieces = asyncio.run(collect())

    assert len(pieces) > 1
    assert "".join(pieces) == rag.response
    assert "every 12 months" in rag.response
    assert rag.stream is False  # the per-call stream override left the instance alone


def test_acall_with_a_sync_only_callable_model(tmp_path):
    folder = write_corpus(tmp_path / "docs")
    seen: list[str] = []

    def model(prompt: str) -> str:
        seen.append(prompt)
        return "Coolant every 5 years (coolant.md)."

    rag = akasha.RAG(model=model, embeddings="hash", cache_dir=":memory:")
    answer = asyncio.run(rag.acall(folder, "When must the coolant be changed?", rerank_top_k=2))
    assert answer.startswith("Coolant every 5 years")
    assert len(seen) == 1 and "coolant" in seen[0].lower()
    assert rag.rerank_top_k == 5


def test_sync_call_works_inside_a_running_event_loop(tmp_path, openai_env):
    folder = write_corpus(tmp_path / "docs")
    rag = akasha.RAG(model="openai:gpt-test", embeddings="hash", cache_dir=":memory:")

    async def notebook_cell() -> str:
        return rag(folder, "How often is the air filter replaced?")  # a plain sync call, loop running

    assert "every 12 months" in asyncio.run(notebook_cell())
