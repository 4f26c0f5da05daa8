"""Issue 32: reranker="llm" ranks the default pool in ONE request, budgeted by the reranker model's own context.

A loopback OpenAI-compatible server counts the chat requests; the answer model is a
local callable, so every chat request the server sees is the reranker's.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai")

from servers.base import serve  # noqa: E402
from servers.openai_server import OpenAIApp  # noqa: E402

import akasha  # noqa: E402
from akasha.testing import HashEmbedder  # noqa: E402

KEY = "sk-test-budget"


def order_all(request) -> str:
    """A valid complete ordering (reversed) of every candidate in the prompt."""
    n = json.dumps(request.body).count("<candidate id=")
    return json.dumps({"order": list(range(n))[::-1]})


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(12):
        words = " ".join(f"pump seal maintenance step {i} detail {j} coolant valve filter" for j in range(40))
        (folder / f"doc{i:02d}.md").write_text(f"# Pump note {i}\n\n{words}\n")
    return folder


def chat_requests(app) -> list:
    return [r for r in app.requests if r.path.endswith("/chat/completions")]


@pytest.mark.parametrize("max_input_tokens", [None, 1500])
def test_one_request_per_rerank_whatever_the_answer_models_budget(corpus, max_input_tokens, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    app = OpenAIApp(api_key=KEY)
    app.chat_reply = order_all
    with serve(app) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        options = {} if max_input_tokens is None else {"max_input_tokens": max_input_tokens}
        rag = akasha.RAG(model=lambda prompt: "answer", embeddings=HashEmbedder(), cache_dir=":memory:",
                         reranker="llm", reranker_model="openai:gpt-4o-mini", **options)
        rag(corpus, "How is the pump seal maintained?")
    requests = chat_requests(app)
    assert len(requests) == 1
    entry = next(e for e in rag.trace if e["stage"] == "rerank")
    assert entry["in"] > 5 and "requests" not in entry


def test_a_split_is_recorded_in_the_trace_when_the_candidates_cannot_fit(corpus, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    app = OpenAIApp(api_key=KEY)
    app.n_ctx = 900  # the reranker model's own context, reported like llama.cpp's GET /props
    app.chat_reply = order_all
    with serve(app) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        rag = akasha.RAG(model=lambda prompt: "answer", embeddings=HashEmbedder(), cache_dir=":memory:",
                         reranker="llm", reranker_model="openai:gpt-4o-mini")
        rag(corpus, "How is the pump seal maintained?")
    entry = next(e for e in rag.trace if e["stage"] == "rerank")
    assert entry["requests"] == len(chat_requests(app)) > 1
